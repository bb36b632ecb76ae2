-- lease_renew: extend a lease that still holds our value.
-- KEYS[1] = lock key, ARGV[1] = holder value, ARGV[2] = ttl in ms
-- Returns 1 renewed, 0 not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
