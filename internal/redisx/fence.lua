-- fence: the fencing rule of package fence in Lua, the one copy of it (FenceLua).
-- The Redis provider and stores put it before the scripts of their fenced
-- writes, which say where their fence memory, lease key and fence are. A fence
-- memory is a hash, in the record's hash slot: lease key -> the highest fence that
-- wrote the record under that key. Fences are canonical decimal strings of
-- positive int64s, compared as strings (Lua numbers are doubles).
local fence_key, fence_lease, fence_value, fence_cur
local function fence_greater(a, b)
  if #a ~= #b then return #a > #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return false
end
-- fence_check is called once by a fenced write, before it writes anything: it
-- returns the fence memory key's remembered fence of lease when that is above
-- value (the write is refused and writes nothing), else nil.
local function fence_check(key, lease, value)
  fence_key, fence_lease, fence_value = key, lease, value
  fence_cur = redis.call('HGET', key, lease)
  if fence_cur and fence_greater(fence_cur, value) then return fence_cur end
  return nil
end
-- fence_remember, called after the write wrote (a no-op unless fence_check
-- ran), raises the memory to the write's fence and makes it live at least as
-- long as the record: ttl is the record's server TTL in ms ('0': it never
-- expires, and neither does the memory); the memory keeps a longer TTL, or none.
local function fence_remember(ttl)
  if not fence_key then return end
  local pttl = redis.call('PTTL', fence_key)
  if not fence_cur or fence_greater(fence_value, fence_cur) then
    redis.call('HSET', fence_key, fence_lease, fence_value)
  end
  if ttl == '0' then
    if pttl >= 0 then redis.call('PERSIST', fence_key) end
  elseif pttl == -2 or (pttl >= 0 and pttl < tonumber(ttl)) then
    redis.call('PEXPIRE', fence_key, ttl)
  end
end
