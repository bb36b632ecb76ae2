-- trait_put: store one trait with its expiry and prune the pipeline's expired traits.
-- Expiry is judged by the caller's clock, passed in (see "Clocks" in the package doc).
-- KEYS[1] = traits hash: trait type -> "<expiry unix µs, 0 = never>|<JSON>"
-- ARGV[1] = trait type, ARGV[2] = expiry µs (0 = never), ARGV[3] = JSON, ARGV[4] = now µs
local now = tonumber(ARGV[4])
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local v = all[i + 1]
  local e = tonumber(string.sub(v, 1, string.find(v, '|', 1, true) - 1))
  if e > 0 and e < now then redis.call('HDEL', KEYS[1], all[i]) end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. '|' .. ARGV[3])
return 1
