-- idx_apply: change one entry of a list index, guarded by the record's sequence.
-- KEYS[1] = index sorted set (score 0, lex-ordered members)
-- KEYS[2] = index hash: id -> "<seq>|<member>", or "<seq>@<ms>|<member>" for a
--           provisional entry stamped with its writer's clock (seq is 0, or the
--           sequence of a tombstone: member "" only in entries written by older
--           versions, which kept tombstones; a removal now deletes the entry)
-- ARGV[1] = mode: "p" provisional add, "s" set (member "" removes), "d" drop the
--           entry of a record whose truth a reader found missing (never written, or
--           lost to eviction), only if the entry is still exactly the one the reader
--           observed before it read the truth (a writer that completed in between
--           changed it: its final step sets a later seq) and, when provisional, only
--           if stamped before ARGV[4] (its writer may still be about to write the
--           truth: dropping the entry then would hide a record that exists)
-- ARGV[2] = id, ARGV[3] = member (modes "p", "s") or the observed entry (mode "d"),
-- ARGV[4] = the writer's clock in ms (mode "p"), seq (mode "s") or the stamp bound
-- (mode "d"), a decimal string
-- Returns 1 if the index changed, 0 otherwise; mode "p" returns the entry it added,
-- or "" when the ID already had one.
local mode, id, member = ARGV[1], ARGV[2], ARGV[3]
local cur = redis.call('HGET', KEYS[2], id)
local curseq, curmember, stamp = '-1', '', nil
if cur then
  local bar = string.find(cur, '|', 1, true)
  curseq = string.sub(cur, 1, bar - 1)
  curmember = string.sub(cur, bar + 1)
  local at = string.find(curseq, '@', 1, true)
  if at then
    stamp = tonumber(string.sub(curseq, at + 1))
    curseq = string.sub(curseq, 1, at - 1)
  end
end
if mode == 'p' then
  if curmember ~= '' then return '' end
  if not cur then curseq = '0' end
  local entry = curseq .. '@' .. ARGV[4] .. '|' .. member
  redis.call('ZADD', KEYS[1], 0, member)
  redis.call('HSET', KEYS[2], id, entry)
  return entry
elseif mode == 'd' then
  if cur ~= ARGV[3] then return 0 end
  if stamp and stamp >= tonumber(ARGV[4]) then return 0 end
  if curmember ~= '' then redis.call('ZREM', KEYS[1], curmember) end
  redis.call('HDEL', KEYS[2], id)
  return 1
end
local seq, cseq = tonumber(ARGV[4]), tonumber(curseq)
if not (seq > cseq or (member == '' and seq == cseq)) then return 0 end
if curmember ~= '' and curmember ~= member then redis.call('ZREM', KEYS[1], curmember) end
if member == '' then
  redis.call('HDEL', KEYS[2], id) -- no tombstone: readers filter by the truth
  return 1
end
redis.call('ZADD', KEYS[1], 0, member)
redis.call('HSET', KEYS[2], id, ARGV[4] .. '|' .. member)
return 1
