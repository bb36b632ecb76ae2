-- lock_release: delete a lock or lease key only if its value starts with ours:
-- "lock:<owner>\n" for a lock (any nonce), "lease:<token>" for a lease.
-- KEYS[1] = lock key, ARGV[1] = holder prefix
-- Returns 1 released, 0 not held.
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
