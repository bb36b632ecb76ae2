-- events_check: what tells whether retention trimmed events after a cursor when
-- the entries read after it (XRANGE, in the same pipeline) cannot tell it
-- themselves. An entry's field p is the ID of the entry before it
-- (append_once.lua), so the first entry after the cursor tells it when there is
-- one and it holds p.
-- KEYS[1] = a pipeline's event stream
-- ARGV[1] = "last": returns the stream's last generated ID when the stream
--           exists and is empty (trimmed to nothing), else false: events after
--           the cursor were trimmed when that ID is greater than the cursor.
-- ARGV[1] = "head", ARGV[2] = an entry's ID, an entry without p (an older
--           version appended it): returns 1 when it is the oldest entry retained
--           and the stream may have been trimmed before it (Redis 7 counts the
--           entries ever added; older servers and miniredis do not), else 0.
if ARGV[1] == 'last' then
  if redis.call('XLEN', KEYS[1]) > 0 or redis.call('EXISTS', KEYS[1]) == 0 then
    return false -- the newest entry is retained, or nothing was ever appended
  end
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then return info[i + 1] end
  end
  return false
end
local head = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if head[1] == nil or head[1][1] ~= ARGV[2] then
  return 0 -- the entry before it is retained: nothing between was trimmed
end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local length, added
for i = 1, #info, 2 do
  if info[i] == 'length' then length = info[i + 1] end
  if info[i] == 'entries-added' then added = info[i + 1] end
end
if added ~= nil and added == length then return 0 end
return 1
