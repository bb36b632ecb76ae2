-- append_once: append an event to a pipeline's stream (XADD) or a late arrival to
-- its list (RPUSH) exactly once per call. The call's marker is set first, with
-- NX, and kept for the call memory, so a call the client retried after a lost
-- reply finds it and appends nothing more.
-- KEYS[1] = stream or list, KEYS[2] = the call's marker (same slot)
-- ARGV[1] = "x" (XADD field e) or "l" (RPUSH), ARGV[2] = marker TTL in ms,
-- ARGV[3] = value, ARGV[4] = approximate MAXLEN of the stream (0 = none)
-- Returns 1 appended, 0 already appended by this call.
if not redis.call('SET', KEYS[2], 1, 'NX', 'PX', ARGV[2]) then return 0 end
if ARGV[1] == 'l' then
  redis.call('RPUSH', KEYS[1], ARGV[3])
elseif ARGV[4] == '0' then
  redis.call('XADD', KEYS[1], '*', 'e', ARGV[3])
else
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], '*', 'e', ARGV[3])
end
return 1
