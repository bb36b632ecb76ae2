-- lease_acquire: take a free lock key as a lease and draw the next fence. A call
-- the client retried after a lost reply finds its own token and returns the fence
-- it drew (nobody else can have drawn one while the key is held).
-- KEYS[1] = lock key, KEYS[2] = fence counter (no TTL; same slot)
-- ARGV[1] = holder value "lease:<token>", ARGV[2] = ttl in ms
-- Returns the fence, or 0 when the key is held by another.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return tonumber(redis.call('GET', KEYS[2]))
end
return 0
