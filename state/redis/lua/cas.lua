-- BytesStore compare-and-swap: the value key is a hash {v = bytes, ver = token}.
-- ARGV[3]: the version the caller read ('' = the key was missing or expired).
-- ARGV[4]: the new value. ARGV[5]: the new version, a token unique to this write (so a
-- key that expired and was re-created never matches an old version).
-- Returns 1 when written, 0 when KEYS[2]'s event was already claimed, and
-- {v, ver} (the current value and version) when the version no longer matches, so
-- that the caller's next attempt needs no extra read.
local cur = redis.call('HMGET', KEYS[1], 'v', 'ver')
if (cur[2] or '') ~= ARGV[3] then
  return {cur[1], cur[2]}
end
redis.call('HSET', KEYS[1], 'v', ARGV[4], 'ver', ARGV[5])
return finish()
