-- zlist: read a page of a sorted set, highest member first, and the hash values
-- of its members, in one step.
-- KEYS[1] = sorted set, KEYS[2] = hash keyed by the same members
-- ARGV[1] = start rank, ARGV[2] = stop rank, ARGV[3] = "f" to return each member
-- (hash field) before its value (optional)
-- Returns the hash values in order, each after its member with "f" (members
-- without a value are skipped).
local ids = redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2])
local fields = ARGV[3] == 'f'
local out = {}
for i = 1, #ids do
  local v = redis.call('HGET', KEYS[2], ids[i])
  if v then
    if fields then out[#out + 1] = ids[i] end
    out[#out + 1] = v
  end
end
return out
