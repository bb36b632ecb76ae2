-- BytesStore compare-and-swap: the value key is a hash {v = bytes, ver = version}.
-- ARGV[4]: the version the caller read ('' = the key was missing or expired).
-- ARGV[5]: the new value. ARGV[6]: the new version: the call's token followed by the
-- tokens of the latest earlier writes (storekey.PushToken), so the caller recognises
-- its own write when a retry of this script meets it.
-- Returns 1 when written, 0 when KEYS[2]'s event was already claimed, and
-- {v, ver} (the current value and version) when the version no longer matches, so
-- that the caller's next attempt needs no extra read, and {-2, newest} when the
-- fence refuses a fenced merge.
if (redis.call('HGET', KEYS[1], 'ver') or '') ~= ARGV[4] then
  return redis.call('HMGET', KEYS[1], 'v', 'ver')
end
-- The fence after the version: a lost race is no outcome (the caller reads
-- again, or finds its own token after a lost reply: applied once), and the
-- next attempt, on the current version, meets the fence.
local refused = fenced_out()
if refused then return refused end
redis.call('HSET', KEYS[1], 'v', ARGV[5], 'ver', ARGV[6])
return finish()
