-- lock_acquire: SET NX [PX] a lock key. The value is "lock:<owner>\n<nonce>", unique
-- per call, so that a call the client retried after a lost reply sees its own value
-- and still succeeds (exactly once), while any other call fails (no re-entry).
-- KEYS[1] = lock key, ARGV[1] = value, ARGV[2] = ttl in ms (0 = none)
-- Returns 1 acquired, 0 held.
local ok
if ARGV[2] == '0' then
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX')
else
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
end
if ok or redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
