-- idx_apply: change one entry of a list index, guarded by the record's sequence.
-- KEYS[1] = index sorted set (score 0, lex-ordered members)
-- KEYS[2] = index hash: id -> "<seq>|<member>" (member "" = tombstone)
-- ARGV[1] = mode: "p" provisional add, "s" set (member "" removes), "d" drop the
--           entry of a record whose truth does not exist (never written, or lost to
--           eviction); a writer in flight re-adds it in its final step
-- ARGV[2] = id, ARGV[3] = member, ARGV[4] = seq (mode "s")
-- Returns 1 if the index changed, 0 otherwise.
local mode, id, member = ARGV[1], ARGV[2], ARGV[3]
local cur = redis.call('HGET', KEYS[2], id)
local curseq, curmember = -1, ''
if cur then
  local bar = string.find(cur, '|', 1, true)
  curseq = tonumber(string.sub(cur, 1, bar - 1))
  curmember = string.sub(cur, bar + 1)
end
if mode == 'p' then
  if curmember ~= '' then return 0 end
  if curseq < 0 then curseq = 0 end
  redis.call('ZADD', KEYS[1], 0, member)
  redis.call('HSET', KEYS[2], id, curseq .. '|' .. member)
  return 1
elseif mode == 'd' then
  if not cur then return 0 end
  if curmember ~= '' then redis.call('ZREM', KEYS[1], curmember) end
  redis.call('HDEL', KEYS[2], id)
  return 1
end
local seq = tonumber(ARGV[4])
if not (seq > curseq or (member == '' and seq == curseq)) then return 0 end
if curmember ~= '' and curmember ~= member then redis.call('ZREM', KEYS[1], curmember) end
if member ~= '' then redis.call('ZADD', KEYS[1], 0, member) end
redis.call('HSET', KEYS[2], id, seq .. '|' .. member)
return 1
