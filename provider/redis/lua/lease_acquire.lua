-- lease_acquire: take a free lock key as a lease and draw the next fence.
-- KEYS[1] = lock key, KEYS[2] = fence counter (no TTL; same slot)
-- ARGV[1] = holder value, ARGV[2] = ttl in ms
-- Returns the fence, or 0 when the key is held.
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
return redis.call('INCR', KEYS[2])
