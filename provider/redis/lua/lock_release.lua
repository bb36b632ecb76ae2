-- lock_release: delete a lock or lease key only if it still holds our value.
-- KEYS[1] = lock key, ARGV[1] = holder value
-- Returns 1 released, 0 not held.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
