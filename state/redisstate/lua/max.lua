-- Int64MaxStore: ARGV[4] is the delta (a canonical base-10 int64, as Go's
-- strconv.FormatInt writes it). Values are compared as decimal strings (less, in
-- lua/less.lua). A fenced merge the
-- fence refuses returns {-2, newest} without writing.
local refused = fenced_out()
if refused then return refused end
local cur = redis.call('GET', KEYS[1])
-- A value that is no integer (written by hand) fails the merge before it
-- writes, as INCRBY fails a sum's: less would compare it as digits.
if cur and not string.match(cur, '^%-?%d+$') then
  return redis.error_reply('ERR value is not an integer or out of range')
end
if not cur or less(cur, ARGV[4]) then
  redis.call('SET', KEYS[1], ARGV[4])
end
return finish()
