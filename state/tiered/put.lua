-- put: write an entry of a tiered store unless Redis holds a newer one.
-- KEYS[1] = the entry
-- ARGV = revision, value, found ("1"/"0"), expiry (Unix ms, 0 = none),
--        filled (Unix ms), lifetime (ms, > 0)
-- Returns 1 when written, 0 when the entry holds a newer revision. A revision
-- equal to the entry's is written again: the same source state, known current
-- at a later instant.
local cur = redis.call('HGET', KEYS[1], 'r')
if cur and tonumber(cur) > tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'r', ARGV[1], 'v', ARGV[2], 'o', ARGV[3], 'x', ARGV[4], 'f', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1
