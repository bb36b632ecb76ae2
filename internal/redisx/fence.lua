-- fence: the fencing rule of package fence in Lua, the one copy of it (FenceLua).
-- The Redis provider and stores put it before the scripts of their writes of
-- records that may be fenced, which say where their fence memory, lease key and
-- fence are. A fence memory is a hash, in the record's hash slot: lease key ->
-- the highest fence that wrote the record under that key. Fences are canonical
-- decimal strings of positive int64s, compared as strings (Lua numbers are
-- doubles).
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
-- value, or what it holds when that is not a fence (the write is refused and
-- writes nothing), else nil.
local function fence_check(key, lease, value)
  fence_key, fence_lease, fence_value = key, lease, value
  fence_cur = redis.call('HGET', key, lease)
  if not fence_cur then return nil end
  -- A memory that holds no fence (corrupt: by hand, a flipped byte) refuses
  -- every fenced write (fails closed); the caller reports it as corrupt.
  if not string.match(fence_cur, '^[1-9][0-9]*$') or #fence_cur > 19 or fence_greater(fence_cur, value) then
    return fence_cur
  end
  return nil
end
-- fence_remember is called after every write that wrote a record a fence
-- memory guards, fenced or not (the memory must outlive every record it
-- guards, whatever write extended it last): ttl is the record's server TTL in
-- ms after the write ('0': it never expires). A fenced write (fence_check ran)
-- raises its memory to the write's fence; an unfenced one passes its record's
-- memory as key (nil: leave memories alone), which it never creates. Either way
-- an existing memory then lives at least ttl: it keeps a longer TTL, or none,
-- and loses its TTL (PERSIST) when ttl is '0'. Nothing ever shortens it.
-- When it must extend a TTL it extends it to ttl plus a slack of
-- max(ttl/16, 1 minute), so the writes within the slack after it (sliding
-- TTLs: every merge of a hot key) pay one PTTL, not a replicated PEXPIRE.
local function fence_remember(ttl, key)
  key = fence_key or key
  if not key then return end
  local pttl = redis.call('PTTL', key)
  if fence_key and (not fence_cur or fence_greater(fence_value, fence_cur)) then
    redis.call('HSET', key, fence_lease, fence_value)
  elseif pttl == -2 then
    return
  end
  if ttl == '0' then
    if pttl >= 0 then redis.call('PERSIST', key) end
    return
  end
  local want = tonumber(ttl)
  if pttl == -2 or (pttl >= 0 and pttl < want) then
    redis.call('PEXPIRE', key, string.format('%.0f', want + math.max(math.floor(want / 16), 60000)))
  end
end
