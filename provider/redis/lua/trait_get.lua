-- trait_get: read traits, pruning those expired by the caller's clock. Pruning is
-- strict at µs granularity, so a live trait is never pruned; the caller filters the
-- rest exactly.
-- KEYS[1] = traits hash
-- ARGV[1] = trait type, or "" for all; ARGV[2] = now µs
-- Returns a flat list of values "<expiry µs>|<JSON>".
local now = tonumber(ARGV[2])
local fields, vals = {}, {}
if ARGV[1] ~= '' then
  local v = redis.call('HGET', KEYS[1], ARGV[1])
  if v then fields[1] = ARGV[1]; vals[1] = v end
else
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    fields[#fields + 1] = all[i]; vals[#vals + 1] = all[i + 1]
  end
end
local out = {}
for i = 1, #vals do
  local v = vals[i]
  local e = tonumber(string.sub(v, 1, string.find(v, '|', 1, true) - 1))
  if e > 0 and e < now then
    redis.call('HDEL', KEYS[1], fields[i])
  else
    out[#out + 1] = v
  end
end
return out
