-- zlist: read the live records of a sorted set, highest member first, and their
-- hash values, in one step: run logs and cascade markers (lua/slot_put.lua). A
-- value "<expiry µs>|<JSON>" is expired when now >= the expiry and is skipped; a
-- value without the prefix never expires. It never writes.
-- KEYS[1] = sorted set, KEYS[2] = hash keyed by the same members
-- ARGV[1] = the most records returned, ARGV[2] = "f" to return each member (hash
-- field) before its value, ARGV[3] = now µs
-- Returns the JSON of up to ARGV[1] live records in order, each after its member
-- with "f" (members without a value are skipped).
local want, fields, now = tonumber(ARGV[1]), ARGV[2] == 'f', tonumber(ARGV[3])
local out, n, rank = {}, 0, 0
local page = math.max(want, 16)
while n < want do
  local ids = redis.call('ZREVRANGE', KEYS[1], rank, rank + page - 1)
  if #ids == 0 then break end
  rank = rank + #ids
  for i = 1, #ids do
    local v = redis.call('HGET', KEYS[2], ids[i])
    if v and n < want then
      local e = string.match(v, '^(%d+)|')
      if e then v = string.sub(v, #e + 2) end
      if not e or tonumber(e) > now then
        if fields then out[#out + 1] = ids[i] end
        out[#out + 1] = v
        n = n + 1
      end
    end
  end
end
return out
