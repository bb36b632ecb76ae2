-- Float64SumStore: ARGV[4] is the delta (a finite float64) as '%.16e' writes it;
-- minFloat and maxFloat (scripts.go defines them before this body) are the smallest
-- non-zero and the largest magnitude of a stored value (state.MinFloat64,
-- state.MaxFloat64). Lua numbers are doubles, so the sum is the float64 sum; it is
-- stored with 17 significant digits ('%.16e'), which read back as the same float64. (The mantissa always has a '.', which miniredis's Lua
-- needs to parse a float.) Returns -1, writing nothing, when the sum leaves the range, -3
-- when the stored value is not a number (corrupt), and {-2, newest}
-- when the fence refuses a fenced merge.
local refused = fenced_out()
if refused then return refused end
local cur = redis.call('GET', KEYS[1])
local sum = tonumber(ARGV[4])
if cur then
  local c = tonumber(cur)
  if not c then
    return -3 -- the stored value is not a number: corrupt
  end
  sum = c + sum
end
local mag = math.abs(sum)
if sum ~= sum or mag > maxFloat or (mag ~= 0 and mag < minFloat) then
  return -1
end
redis.call('SET', KEYS[1], string.format('%.16e', sum))
return finish()
