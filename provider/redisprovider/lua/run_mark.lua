-- run_mark: the truth step of ReindexRun (see "Active runs" in the package doc):
-- record on the run hash that its active-runs entry was added before it (field
-- a = its version v), only if the run is unchanged since the caller read it and
-- live. Nothing else of the run changes: not v, j, x, s, nor the key's TTL.
-- KEYS[1] = run hash (fields s = sequence, v = version, x = expiry µs, a = mark)
-- ARGV[1] = the sequence the caller read, ARGV[2] = now µs
-- Returns -1 when the run changed (another sequence), is missing or expired:
-- nothing written; 1 when it set a, 0 when a was set already.
local cur = redis.call('HMGET', KEYS[1], 's', 'v', 'x', 'a')
if not cur[1] or not cur[2] or tonumber(cur[1]) ~= tonumber(ARGV[1]) then return -1 end
if cur[3] and cur[3] ~= '0' and tonumber(cur[3]) <= tonumber(ARGV[2]) then return -1 end
if cur[4] == cur[2] then return 0 end
redis.call('HSET', KEYS[1], 'a', cur[2])
return 1
