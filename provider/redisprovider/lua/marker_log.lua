-- marker_log: append one cascade marker write to the marker log, the stream of the
-- marker writes of every pipeline, with the ID of the entry generated before it,
-- so that a watcher tells a gap (writes trimmed after its cursor) from the next
-- write. The ID before is the stream's last generated ID (XINFO STREAM), exact
-- even after the stream was trimmed to nothing.
-- KEYS[1] = the marker log (stream: field m = marker JSON, p = ID before, "0-0"
--           for the first)
-- ARGV[1] = marker JSON, ARGV[2] = approximate MAXLEN of the stream (0 = none)
-- Returns the new entry's ID.
local prev = '0-0'
if redis.call('EXISTS', KEYS[1]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then prev = info[i + 1] end
  end
end
if ARGV[2] == '0' then
  return redis.call('XADD', KEYS[1], '*', 'm', ARGV[1], 'p', prev)
end
return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'm', ARGV[1], 'p', prev)
