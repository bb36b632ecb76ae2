-- Int64MaxStore: ARGV[4] is the delta (a canonical base-10 int64, as Go's
-- strconv.FormatInt writes it). Values are compared as decimal strings, not as Lua
-- numbers, which are doubles and would round int64s above 2^53. A fenced merge the
-- fence refuses returns {-2, newest} without writing.
local function less(a, b)
  local an, bn = string.byte(a, 1) == 45, string.byte(b, 1) == 45 -- 45 is '-'
  if an ~= bn then
    return an
  end
  if #a ~= #b then
    return (#a < #b) ~= an
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return (x < y) ~= an
    end
  end
  return false
end

local refused = fenced_out()
if refused then return refused end
local cur = redis.call('GET', KEYS[1])
if not cur or less(cur, ARGV[4]) then
  redis.call('SET', KEYS[1], ARGV[4])
end
return finish()
