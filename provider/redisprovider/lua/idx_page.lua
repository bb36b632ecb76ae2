-- idx_page: read one page of a list index together with each member's index entry,
-- so that a reader can later repair exactly the entry it observed.
-- KEYS[1] = index sorted set, KEYS[2] = index hash (id -> "<seq>|<member>")
-- ARGV[1] = "desc" (highest member first) or "asc", ARGV[2] = start bound ("-", "+"
-- or "(<member>", exclusive), ARGV[3] = count, ARGV[4] = length of the member's
-- prefix before the ID (0: the member is the ID; a shorter member is its own ID)
-- Returns member1, id1, entry1, member2, id2, entry2, ... (entry "" when the hash
-- has none).
local members
if ARGV[1] == 'desc' then
  members = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[2], '-', 'LIMIT', 0, ARGV[3])
else
  members = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], '+', 'LIMIT', 0, ARGV[3])
end
local off = tonumber(ARGV[4])
local out = {}
for i = 1, #members do
  local m = members[i]
  local id = m
  if off > 0 and #m >= off then id = string.sub(m, off + 1) end
  out[#out + 1] = m
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', KEYS[2], id) or ''
end
return out
