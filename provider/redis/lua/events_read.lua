-- events_read: ReadEventsSince's read of a pipeline's stream after a cursor, with
-- what tells whether retention trimmed events after the cursor when the entries
-- read cannot tell it themselves. An entry's field p is the ID of the entry
-- before it (append_once.lua), so the first entry after the cursor tells it:
-- events were trimmed after the cursor when its p is greater than the cursor.
-- KEYS[1] = the stream
-- ARGV[1] = the cursor (a stream ID), ARGV[2] = count
-- Returns {entries} (XRANGE's reply for the entries after the cursor), or
-- {entries, "last", id} when none follows the cursor and the stream was trimmed
-- to nothing (id: its last generated ID; events after the cursor were trimmed
-- when id is greater than the cursor), or {entries, "head", id} when the first
-- entry after the cursor (id) has no p (an older version appended it), is the
-- oldest entry retained, and the stream may have been trimmed before it.
local entries = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
local first = entries[1]
if first == nil then
  if redis.call('XLEN', KEYS[1]) > 0 or redis.call('EXISTS', KEYS[1]) == 0 then
    return {entries} -- the newest entry is retained: nothing after it was trimmed
  end
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then return {entries, 'last', info[i + 1]} end
  end
  return {entries}
end
local fields = first[2]
for i = 1, #fields, 2 do
  if fields[i] == 'p' then return {entries} end
end
local head = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if head[1][1] ~= first[1] then
  return {entries} -- the entry before it is retained: nothing between was trimmed
end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local length, added
for i = 1, #info, 2 do
  if info[i] == 'length' then length = info[i + 1] end
  if info[i] == 'entries-added' then added = info[i + 1] end
end
if added ~= nil and added == length then
  return {entries} -- never trimmed (Redis 7 counts the entries ever added)
end
return {entries, 'head', first[1]}
