-- lock_release: delete a lock or lease key only if it is held by exactly the given
-- holder: for a lock the value's owner part (before the "\n" that precedes the
-- nonce) must equal "lock:<owner>", for a lease the value must equal
-- "lease:<token>" (never a prefix match: owner "w-1" must not free w-10's lock).
-- The call's nonce is kept for releaseMemory ms in a marker key, so a call the
-- client retried after a lost reply finds it and reports its release again.
-- KEYS[1] = lock key, KEYS[2] = release marker key (same slot)
-- ARGV[1] = holder, ARGV[2] = nonce of the call, ARGV[3] = marker ttl in ms
-- Returns 1 released, 0 not held.
local v = redis.call('GET', KEYS[1])
if v then
  local nl = string.find(v, '\n', 1, true)
  if nl then v = string.sub(v, 1, nl - 1) end
  if v == ARGV[1] then
    redis.call('DEL', KEYS[1])
    redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
    return 1
  end
end
if redis.call('GET', KEYS[2]) == ARGV[2] then return 1 end
return 0
