-- lock_acquire: SET NX [PX] a lock key, once per call. The value is
-- "lock:<owner>\n<nonce>", the nonce unique to the call; on success the call's
-- marker is kept for the call memory, so that a call the client retried after a
-- lost reply reports its first attempt's success and takes nothing more, even if
-- the lock was released (by another call of the same owner) or taken since.
-- KEYS[1] = lock key, KEYS[2] = the call's marker (same slot)
-- ARGV[1] = value, ARGV[2] = ttl in ms (0 = none), ARGV[3] = marker TTL in ms
-- Returns 1 acquired, 0 held.
if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
local ok
if ARGV[2] == '0' then
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX')
else
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
end
if not ok then return 0 end
redis.call('SET', KEYS[2], 1, 'PX', ARGV[3])
return 1
