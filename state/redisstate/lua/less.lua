-- less: whether the canonical base-10 int64 a (as Go's strconv.FormatInt writes
-- it) is below b, compared as decimal strings, not as Lua numbers, which are
-- doubles and would round int64s above 2^53. The max script's prelude.
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
-- canonical: whether s is a canonical base-10 int64, as Go's strconv.FormatInt
-- writes it (what less compares; anything else stored is corrupt).
local function canonical(s)
  if s == '0' then return true end
  local digits = string.match(s, '^-?([1-9][0-9]*)$')
  if not digits or #digits > 19 then return false end
  if #digits < 19 then return true end
  local limit = '9223372036854775807'
  if string.byte(s, 1) == 45 then limit = '9223372036854775808' end
  return digits <= limit
end
