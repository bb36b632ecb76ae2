-- Batch wrapper (batch.go puts it where a single-key merge script calls merge
-- once, after the common head and one body, see mergeBody.source): one call merges many
-- keys, each exactly as its own script would (atomic per key; here the whole call
-- is atomic too, but MergeMany does not promise it).
-- KEYS: the value keys, one per update, then the fence memory of each update's
-- value (package fence), fenced or not; on Redis Cluster all in one slot.
-- ARGV[2i-1], ARGV[2i]: update i's ttl in milliseconds and its delta; the last
-- two: the lease key and fence of a fenced batch, '' and '' otherwise.
-- Returns one reply per update: the single-key script's (1, -1 when refused,
-- {-2, newest} when the fence refuses it) or its error. A Lua error of one merge
-- (WRONGTYPE...) fails that update only.
local n = (#ARGV - 2) / 2
local args = {'', '0', '', ''}
local key = {}
local out = {}
if ARGV[#ARGV] ~= '' then
  args[5], args[6] = ARGV[#ARGV - 1], ARGV[#ARGV]
end
for i = 1, n do
  key[1] = KEYS[i]
  key[2] = KEYS[n + i]
  args[1] = ARGV[2 * i - 1]
  args[4] = ARGV[2 * i]
  local ok, r = pcall(merge, key, args)
  if ok then
    out[i] = r
  elseif type(r) == 'table' then
    out[i] = r
  else
    out[i] = {err = tostring(r)}
  end
end
return out
