-- Shared head of every merge script (scripts.go prepends it to each body, after a
-- line that sets fenceAt, the first argument after the body's).
-- KEYS[1]: the value key.
-- KEYS[2]: only for MergeUpdateOnce, the event's claim key; it shares KEYS[1]'s hash
--          tag, so both live in one Redis Cluster slot.
-- KEYS[#KEYS]: only for a fenced merge (package fence), the fence memory of the
--          value's entity and store kind (a hash lease key -> the highest fence
--          that merged, prefix:{entity}:kind:fences, in KEYS[1]'s slot).
-- ARGV[1]: the value's ttl in milliseconds, '0' = no expiry (clears an earlier one).
-- ARGV[2]: the claim's ttl in milliseconds, '0' = the claim never expires.
-- ARGV[3]: the call's token, a fresh random string per MergeUpdateOnce call, stored
--          as the claim's value: a claim holding it was taken by this very call, whose
--          reply was lost and which the client library is now retrying, so the
--          delta was applied once and the answer is 1 again.
-- ARGV[4...]: the body's arguments.
-- ARGV[fenceAt], ARGV[fenceAt + 1]: only for a fenced merge, the lease key and the
--          fence (a canonical decimal string). An unfenced merge passes no fence
--          key or argument and never touches a fence memory.
-- Bodies must not write before their last possible error (Lua scripts do not roll
-- back): a claim is only written by finish(), after the value was written.
-- A body calls fenced_out() before it writes (after the claim, which the head
-- checks first: a repeated event is a duplicate, not a refusal) and returns
-- its refusal {-2, newest} when there is one.
local fenced = ARGV[fenceAt] ~= nil
local claimKey
if #KEYS == (fenced and 3 or 2) then claimKey = KEYS[2] end
if claimKey then
  local claim = redis.call('GET', claimKey)
  if claim == ARGV[3] then
    return 1
  elseif claim then
    return 0
  end
end
-- fenced_out applies the fencing rule (redisx.FenceLua, which scripts.go puts
-- before this head) to the fence memory KEYS[#KEYS] and the lease key and fence
-- ARGV[fenceAt], ARGV[fenceAt + 1].
local function fenced_out()
  if not fenced then return nil end
  local newest = fence_check(KEYS[#KEYS], ARGV[fenceAt], ARGV[fenceAt + 1])
  if newest then return {-2, newest} end
  return nil
end
local function finish()
  if ARGV[1] == '0' then
    redis.call('PERSIST', KEYS[1])
  else
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
  end
  if claimKey then
    if ARGV[2] == '0' then
      redis.call('SET', claimKey, ARGV[3])
    else
      redis.call('SET', claimKey, ARGV[3], 'PX', ARGV[2])
    end
  end
  fence_remember(ARGV[1])
  return 1
end
