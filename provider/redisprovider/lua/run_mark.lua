-- run_mark: the truth step of ReindexRun (see "Active runs" in the package doc):
-- record on the run hash that its active-runs entry was added before it (field
-- a = its version v), only if the run is unchanged since the caller read it and
-- live. Nothing else of the run changes: not v, j, x, s, nor the key's TTL.
-- KEYS[1] = run hash (fields s = sequence, v = version, x = expiry µs, a = mark)
-- ARGV[1] = the sequence the caller read, ARGV[2] = now µs
-- Returns -1 when the run changed (another sequence), is missing or expired
-- (x as lua/record.lua reads it): nothing written; 1 when it set a; 0 when a
-- was set already, or v is missing (corrupt: nothing to mark; the entry
-- stands, and the run's next write marks it).
local cur = redis.call('HMGET', KEYS[1], 's', 'v', 'x', 'a')
if not cur[1] or tonumber(cur[1]) ~= tonumber(ARGV[1]) or not record_live(cur[3], ARGV[2]) then return -1 end
if not cur[2] or cur[4] == cur[2] then return 0 end
redis.call('HSET', KEYS[1], 'a', cur[2])
return 1
