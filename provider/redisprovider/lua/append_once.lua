-- append_once: append an event to a pipeline's stream (XADD) or a late arrival to
-- its list (RPUSH) exactly once per call. The call's marker is set first, with
-- NX, and kept for the call memory, so a call the client retried after a lost
-- reply finds it and appends nothing more.
-- An event entry holds, in field p, the ID of the entry before it: the stream's
-- last entry, or its last generated ID (XINFO STREAM) when it was trimmed to
-- nothing, "0-0" for the first. A reader whose cursor is older than the p of the
-- first entry after it knows that retention trimmed events after its cursor (see
-- events_read.lua).
-- A late arrival is appended as "<expiry µs>|<JSON>" (the JSON alone never
-- expires, as values written before retention); the append first pops up to 100
-- expired ones from the front of the list (the oldest first, as appended), and
-- gives the list a server TTL that outlives its youngest element.
-- KEYS[1] = stream or list, KEYS[2] = the call's marker (same slot)
-- ARGV[1] = "x" (XADD field e, and p) or "l" (RPUSH), ARGV[2] = marker TTL in ms,
-- ARGV[3] = value, ARGV[4] = approximate MAXLEN of the stream (0 = none);
-- for "l": ARGV[5] = now µs, ARGV[6] = expiry µs ("0": never), ARGV[7] = server
-- TTL in ms ("0": none)
-- KEYS[3] = the fence memory of the pipeline, ARGV's last two = the lease key
-- and fence ('' unfenced; see fence.lua). Fenced, the marker is checked first
-- and set only when the fence admits the append, so a refusal's retry is
-- refused again. A late arrival makes the memory live as long as its list
-- (fence_kept: the list's TTL, which may be longer than the element's), fenced
-- or not. A stream never expires, so a fenced event makes
-- the memory never expire either (an unfenced one needs not: a memory that
-- guards the stream has no TTL already).
-- Returns 1 appended, 0 already appended by this call, {-2, newest} refused by
-- the fence.
if fence_fenced() and redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local newest = fence_refused(2)
if newest then return {-2, newest} end
if not redis.call('SET', KEYS[2], 1, 'NX', 'PX', ARGV[2]) then return 0 end
if ARGV[1] == 'l' then
  for _ = 1, 100 do
    local v = redis.call('LINDEX', KEYS[1], 0)
    local e = v and string.match(v, '^(%d+)|')
    if not e or tonumber(e) > tonumber(ARGV[5]) then break end
    redis.call('LPOP', KEYS[1])
  end
  local fresh = redis.call('EXISTS', KEYS[1]) == 0
  if ARGV[6] == '0' then
    redis.call('RPUSH', KEYS[1], ARGV[3])
    redis.call('PERSIST', KEYS[1])
    fence_kept('0')
    return 1
  end
  redis.call('RPUSH', KEYS[1], ARGV[6] .. '|' .. ARGV[3])
  local ttl = redis.call('PTTL', KEYS[1])
  if (ttl == -1 and fresh) or (ttl >= 0 and ttl < tonumber(ARGV[7])) then
    redis.call('PEXPIRE', KEYS[1], ARGV[7])
    ttl = tonumber(ARGV[7])
  end
  -- the memory lives as long as the list, which may outlive this element
  if ttl == -1 then ttl = '0' end
  fence_kept(ttl)
  return 1
end
local prev = '0-0'
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if last[1] then
  prev = last[1][1]
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then prev = info[i + 1] end
  end
end
if ARGV[4] == '0' then
  redis.call('XADD', KEYS[1], '*', 'e', ARGV[3], 'p', prev)
else
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], '*', 'e', ARGV[3], 'p', prev)
end
fence_remember('0')
return 1
