-- traits_read: read a pipeline's traits without writing (it runs with EVALSHA_RO),
-- for GetTraits when the traits hash is larger than one HSCAN reads: pruning is
-- PutTrait's (lua/traits.lua), so a read works with credentials that may only
-- read, and its work grows with the live traits, not with the expired ones the
-- hash still holds.
-- KEYS[1] = traits hash: trait type -> "<expiry unix µs, 0 = never>|<JSON>"
-- KEYS[2] = expiry index: sorted set trait type -> expiry µs (+inf = never)
-- ARGV[1] = now µs, ARGV[2] = the most traits the caller reads by HSCAN
-- Returns a flag and values: "1" and every value of the hash when it has at most
-- ARGV[2] fields (the caller may read it by HSCAN next time); otherwise "0" and
-- the values of the traits the index lists as live at µs granularity, or of every
-- trait when the index cannot be trusted: its size differs from the hash's (a
-- version that kept no index, an evicted key), or one of the 100 earliest
-- entries it lists as expired is not expired in the hash (a stale index; PutTrait
-- indexes such a hash again). The caller filters exactly.
local n = redis.call('HLEN', KEYS[1])
if n <= tonumber(ARGV[2]) or redis.call('ZCARD', KEYS[2]) ~= n then
  local vals = redis.call('HVALS', KEYS[1])
  local flag = '0'
  if n <= tonumber(ARGV[2]) then flag = '1' end
  table.insert(vals, 1, flag)
  return vals
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0, 100)
if #gone > 0 then
  local vals = redis.call('HMGET', KEYS[1], unpack(gone))
  for i = 1, #gone do
    local v = vals[i]
    local bar = v and string.find(v, '|', 1, true)
    local e = bar and string.sub(v, 1, bar - 1)
    -- a value not of the form "<expiry µs>|<JSON>" (written by hand) disagrees
    -- with the index too; the caller reports it as corrupt
    if not e or e == '0' or not tonumber(e) or tonumber(e) >= tonumber(ARGV[1]) then
      local all = redis.call('HVALS', KEYS[1])
      table.insert(all, 1, '0')
      return all
    end
  end
end
local live = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], '+inf')
local out = {'0'}
for i = 1, #live, 1000 do
  local vals = redis.call('HMGET', KEYS[1], unpack(live, i, math.min(i + 999, #live)))
  for j = 1, #vals do
    if vals[j] then out[#out + 1] = vals[j] end
  end
end
return out
