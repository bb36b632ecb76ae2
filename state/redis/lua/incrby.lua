-- Int64SumStore: ARGV[4] is the delta (a base-10 int64). INCRBY fails without writing
-- on overflow (returns -1) or a non-integer value (the error is passed on).
local r = redis.pcall('INCRBY', KEYS[1], ARGV[4])
if type(r) == 'table' and r.err then
  if string.find(r.err, 'overflow', 1, true) then
    return -1
  end
  return r
end
return finish()
