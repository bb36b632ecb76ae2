-- Shared head of every merge script (scripts.go prepends it to each body).
-- KEYS[1]: the value key.
-- KEYS[2]: only for MergeUpdateOnce, the event's claim key; it shares KEYS[1]'s hash
--          tag, so both live in one Redis Cluster slot.
-- ARGV[1]: the value's ttl in milliseconds, '0' = no expiry (clears an earlier one).
-- ARGV[2]: the claim's ttl in milliseconds, '0' = the claim never expires.
-- ARGV[3]: the call's token, a fresh random string per MergeUpdateOnce call, stored
--          as the claim's value: a claim holding it was taken by this very call, whose
--          reply was lost and which the client library is now retrying, so the
--          delta was applied once and the answer is 1 again.
-- ARGV[4...]: the body's arguments.
-- Bodies must not write before their last possible error (Lua scripts do not roll
-- back): a claim is only written by finish(), after the value was written.
if KEYS[2] then
  local claim = redis.call('GET', KEYS[2])
  if claim == ARGV[3] then
    return 1
  elseif claim then
    return 0
  end
end
local function finish()
  if ARGV[1] == '0' then
    redis.call('PERSIST', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
  end
  if KEYS[2] then
    if ARGV[2] == '0' then
      redis.call('SET', KEYS[2], ARGV[3])
    else
      redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
    end
  end
  return 1
end
