-- append_once: append an event to a pipeline's stream (XADD) or a late arrival to
-- its list (RPUSH) exactly once per call. The call's nonce is kept in the
-- pipeline's append set, scored by the caller's clock in ms and forgotten after
-- the append memory, so a call the client retried after a lost reply finds it and
-- appends nothing more.
-- KEYS[1] = stream or list, KEYS[2] = append set (zset nonce -> ms; same slot)
-- ARGV[1] = "x" (XADD field e) or "l" (RPUSH), ARGV[2] = nonce, ARGV[3] = now ms,
-- ARGV[4] = forget nonces scored below this ms, ARGV[5] = memory ms (the set's TTL),
-- ARGV[6] = value, ARGV[7] = approximate MAXLEN of the stream (0 = none)
-- Returns 1 appended, 0 already appended by this call.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[4])
if redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[2]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[5])
if ARGV[1] == 'l' then
  redis.call('RPUSH', KEYS[1], ARGV[6])
elseif ARGV[7] == '0' then
  redis.call('XADD', KEYS[1], '*', 'e', ARGV[6])
else
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[7], '*', 'e', ARGV[6])
end
return 1
