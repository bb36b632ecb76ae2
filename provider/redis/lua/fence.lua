-- fence: the fencing rule of package fence, prepended by scripts.go to the
-- scripts of the writes that take a fence (record_put, run_cas, append_once,
-- slot_put). A fenced write passes, after the script's own keys and arguments,
-- the fence memory of its record as its last KEY (a hash lease key -> the
-- highest fence that wrote under that key, in the record's hash tag, see "Key
-- schema") and the lease key and fence as its last two ARGV. An unfenced write
-- passes neither, and the script never touches a fence memory.
-- Fences are canonical decimal strings of positive int64s, compared as strings
-- (Lua numbers are doubles).
local fence_key, fence_lease, fence_value, fence_cur
local function fence_greater(a, b)
  if #a ~= #b then return #a > #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return false
end
-- fence_refused is called once, after the call's own marker and before
-- anything the write checks itself; nkeys is the script's KEYS count unfenced.
-- It returns the remembered fence when it is above the write's (the write is
-- refused and writes nothing), else nil.
local function fence_refused(nkeys)
  if #KEYS == nkeys then return nil end
  fence_key, fence_lease, fence_value = KEYS[#KEYS], ARGV[#ARGV - 1], ARGV[#ARGV]
  fence_cur = redis.call('HGET', fence_key, fence_lease)
  if fence_cur and fence_greater(fence_cur, fence_value) then return fence_cur end
  return nil
end
-- fence_args is the number of ARGV before the fence's (all of them unfenced).
local function fence_args()
  if fence_key then return #ARGV - 2 end
  return #ARGV
end
-- fence_remember, called after the write wrote, raises the memory to the
-- write's fence and makes it live at least as long as the record: ttl is the
-- record's server TTL in ms ('0': it never expires, and neither does the
-- memory); the memory keeps a longer TTL, or none.
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
