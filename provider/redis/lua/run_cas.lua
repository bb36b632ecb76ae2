-- run_cas: compare-and-swap a run's state on its version. ARGV[4] is a nonce unique
-- to the call, kept in field n: a call the client retried after a lost reply finds
-- its own nonce on the version it wrote and reports success again. Versions are
-- compared and stored as the decimal strings the caller passes (no Lua number
-- arithmetic, so every version up to types.MaxRunVersion is exact).
-- KEYS[1] = run hash (fields v = version, p = pipeline, j = JSON, n = last nonce, ...)
-- ARGV[1] = expected version, ARGV[2] = pipeline of the new state, ARGV[3] = new
-- JSON, ARGV[4] = nonce, ARGV[5] = new version (expected + 1)
-- Returns 1 swapped, 0 missing or version mismatch, -1 pipeline mismatch.
local cur = redis.call('HMGET', KEYS[1], 'v', 'p', 'n')
if not cur[1] then return 0 end
if cur[2] ~= ARGV[2] then return -1 end
if cur[1] == ARGV[5] and cur[3] == ARGV[4] then return 1 end
if cur[1] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[5], 'j', ARGV[3], 'n', ARGV[4])
return 1
