-- run_cas: compare-and-swap a run's state on its version.
-- KEYS[1] = run hash (fields v = version, p = pipeline, j = JSON, ...)
-- ARGV[1] = expected version, ARGV[2] = pipeline of the new state, ARGV[3] = new JSON
-- Returns 1 swapped, 0 missing or version mismatch, -1 pipeline mismatch.
local cur = redis.call('HMGET', KEYS[1], 'v', 'p')
if not cur[1] then return 0 end
if cur[2] ~= ARGV[2] then return -1 end
if cur[1] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[1]) + 1, 'j', ARGV[3])
return 1
