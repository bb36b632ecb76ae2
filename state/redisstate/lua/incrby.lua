-- Int64SumStore: ARGV[4] is the delta (a base-10 int64). INCRBY fails without writing
-- on overflow (returns -1) or a stored value that is not an int64 (returns -3:
-- corrupt); a fenced merge the fence refuses returns {-2, newest} without writing.
local refused = fenced_out()
if refused then return refused end
local r = redis.pcall('INCRBY', KEYS[1], ARGV[4])
if type(r) == 'table' and r.err then
  if string.find(r.err, 'overflow', 1, true) then
    return -1
  end
  return -3
end
return finish()
