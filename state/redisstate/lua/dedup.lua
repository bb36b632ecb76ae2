-- Deduper.MarkSeen. KEYS[1]: the claim key. ARGV[1]: the claim's ttl in
-- milliseconds, '0' = never expires. ARGV[2]: the call's token, a fresh random string
-- per MarkSeen call, stored as the claim's value. A claim holding it was taken by this
-- very call (its reply was lost and the client library is retrying): still first.
-- Returns 1 for the first caller, 0 for everybody else.
local claim = redis.call('GET', KEYS[1])
if claim then
  return claim == ARGV[2] and 1 or 0
end
if ARGV[1] == '0' then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
end
return 1
