-- Shared head of every merge script (scripts.go puts it after the fencing rule
-- and a line that sets fenceAt, the first argument after the body's; the body
-- follows as the function merge(KEYS, ARGV), which starts with
-- 'local decided = claimed(KEYS, ARGV)' and which the script calls once, or the
-- batch wrapper once per key). Its functions are defined once per script call,
-- not per key: the state of the key being merged is in K, A, fenced and
-- claimKey, which claimed sets. Per key:
-- KEYS[1]: the value key.
-- KEYS[2]: only for MergeUpdateOnce, the event's claim key; it shares KEYS[1]'s hash
--          tag, so both live in one Redis Cluster slot.
-- KEYS[#KEYS]: the fence memory of the value's entity and store kind (package
--          fence; a hash lease key -> the highest fence that merged,
--          prefix:{entity}:kind:fences, in KEYS[1]'s slot), fenced or not.
-- ARGV[1]: the value's ttl in milliseconds, '0' = no expiry (clears an earlier one).
-- ARGV[2]: the claim's ttl in milliseconds, '0' = the claim never expires.
-- ARGV[3]: the call's token, a fresh random string per MergeUpdateOnce call, stored
--          as the claim's value: a claim holding it was taken by this very call, whose
--          reply was lost and which the client library is now retrying, so the
--          delta was applied once and the answer is 1 again.
-- ARGV[4...]: the body's arguments.
-- ARGV[fenceAt], ARGV[fenceAt + 1]: only for a fenced merge, the lease key and the
--          fence (a canonical decimal string). An unfenced merge passes no fence
--          argument; it never reads a fence memory nor creates one, but once it
--          merged it makes an existing one live at least as long as the value
--          (finish), as a fenced merge does: a memory outlives every value it
--          guards, whatever merge extended the value last.
-- Bodies must not write before their last possible error (Lua scripts do not roll
-- back): a claim is only written by finish(), after the value was written.
-- A body calls fenced_out() before it writes (after the claim, which claimed
-- checks first: a repeated event is a duplicate, not a refusal) and returns
-- its refusal {-2, newest} when there is one.
local K, A, fenced, claimKey
-- claimed starts the merge of one key: it returns 1 when the key's claim holds
-- this call's token (a retried call whose first attempt merged), 0 when another
-- call's (a duplicate event), else nil and the merge goes on.
local function claimed(keys, argv)
  K, A = keys, argv
  fenced = A[fenceAt] ~= nil
  claimKey = nil
  if #K == 3 then claimKey = K[2] end
  if claimKey then
    local claim = redis.call('GET', claimKey)
    if claim == A[3] then
      return 1
    elseif claim then
      return 0
    end
  end
  return nil
end
-- fenced_out applies the fencing rule (redisx.FenceLua, which scripts.go puts
-- before this head) to the fence memory K[#K] and the lease key and fence
-- A[fenceAt], A[fenceAt + 1].
local function fenced_out()
  if not fenced then return nil end
  local newest = fence_check(K[#K], A[fenceAt], A[fenceAt + 1])
  if newest then return {-2, newest} end
  return nil
end
local function finish()
  if A[1] == '0' then
    redis.call('PERSIST', K[1])
  else
    redis.call('PEXPIRE', K[1], A[1])
  end
  if claimKey then
    if A[2] == '0' then
      redis.call('SET', claimKey, A[3])
    else
      redis.call('SET', claimKey, A[3], 'PX', A[2])
    end
  end
  fence_remember(A[1], K[#K])
  return 1
end
