-- Batch wrapper (batch.go puts it after a single-key merge script, the common head
-- and one body, wrapped as the function merge(KEYS, ARGV)): one call merges many
-- keys, each exactly as its own script would (atomic per key; here the whole call
-- is atomic too, but MergeMany does not promise it).
-- KEYS: the value keys, one per update; on Redis Cluster all in one slot.
-- ARGV[2i-1], ARGV[2i]: update i's ttl in milliseconds and its delta.
-- Returns one reply per update: the single-key script's (1, or -1 when refused) or
-- its error. A Lua error of one merge (WRONGTYPE...) fails that update only.
local args = {'', '0', '', ''}
local key = {}
local out = {}
for i = 1, #KEYS do
  key[1] = KEYS[i]
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
