-- Int64MaxStore: ARGV[4] is the delta (a canonical base-10 int64, as Go's
-- strconv.FormatInt writes it). Values are compared as decimal strings (less, in
-- lua/less.lua). A fenced merge the
-- fence refuses returns {-2, newest} without writing; a stored value that is not a
-- canonical int64 (corrupt) returns -3 without writing.
local refused = fenced_out()
if refused then return refused end
local cur = redis.call('GET', KEYS[1])
if cur and not canonical(cur) then return -3 end -- not an int64: corrupt
if not cur or less(cur, ARGV[4]) then
  redis.call('SET', KEYS[1], ARGV[4])
end
return finish()
