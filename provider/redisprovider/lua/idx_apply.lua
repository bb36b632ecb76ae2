-- idx_apply: change one entry of a list index, guarded by the record's sequence.
-- KEYS[1] = index sorted set (score 0, lex-ordered members)
-- KEYS[3] = expiry index: sorted set id -> the record's expiry µs, as its last
--           set saw it (records that never expire are not in it); writes prune
--           the list through it (see lua/idx_expired.lua)
-- KEYS[2] = index hash: id -> "<seq>|<member>", "<seq>@<ms>|<member>" for a
--           provisional entry stamped with its writer's clock (seq is 0, or the
--           sequence of a tombstone: member "" only in entries written by older
--           versions, which kept tombstones; a removal now deletes the entry), or
--           "<seq>#<ms>|<member>" for a settled entry that a writer's step 1 relied
--           on at <ms> (it found the entry and added none)
-- ARGV[1] = mode: "p" provisional add, "s" set (member "" removes), "x" move the
--           id in the expiry index to ARGV[3] (the truth's expiry µs; "0": out of
--           it, as when the entry is gone), "d" drop the
--           entry of a record whose truth a reader found missing (never written, or
--           lost to eviction), only if the entry is still exactly the one the reader
--           observed before it read the truth (a writer that completed in between
--           changed it: its final step sets a later seq) and, when stamped, only
--           if stamped before ARGV[4] (its writer may still be about to write the
--           truth: dropping the entry then would hide a record that exists)
-- ARGV[2] = id, ARGV[3] = member (modes "p", "s") or the observed entry (mode "d"),
-- ARGV[4] = the writer's clock in ms (mode "p"), seq (mode "s") or the stamp bound
-- (mode "d"), a decimal string
-- ARGV[6] (mode "s") = the record's expiry µs ("0": never), its score in KEYS[3]
-- ARGV[5] (mode "s") = for a set, the stamp of the caller's own step 1 (0: none),
-- which the set clears (even when a later sequence refuses the set); any other
-- stamp stays, as its writer may not have written its truth yet. For a removal,
-- the stamp bound: an entry stamped at or after it is kept, as its writer may be
-- about to write a truth that wants it (a removal's sequence can predate that
-- truth), and a later reader's repair removes it.
-- A set of the entry's own sequence and member changes nothing but puts the
-- member back in KEYS[1] if it was lost (ReindexRun's repair), returning 1 then.
-- Mode "p" on an existing entry stamps it with ARGV[4] (the later of the two
-- stamps), so that neither a removal nor a reader's drop takes it from under the
-- writer, and returns "".
-- Returns 1 if the index changed, 0 otherwise; mode "p" returns the entry it added,
-- or "" when the ID already had one.
local mode, id, member = ARGV[1], ARGV[2], ARGV[3]
local cur = redis.call('HGET', KEYS[2], id)
local curseq, curmember, stamp, stampstr, mark = '-1', '', nil, nil, '@'
if cur then
  local bar = string.find(cur, '|', 1, true)
  if bar then
    curseq = string.sub(cur, 1, bar - 1)
    curmember = string.sub(cur, bar + 1)
    local at = string.find(curseq, '[@#]')
    if at then
      mark = string.sub(curseq, at, at)
      stampstr = string.sub(curseq, at + 1)
      stamp = tonumber(stampstr)
      curseq = string.sub(curseq, 1, at - 1)
    elseif curseq ~= '0' then
      mark = '#'
    end
  end
  local n = tonumber(curseq)
  if not bar or not n or n < 0 or n ~= math.floor(n) or n >= 2^53 or (stampstr and not stamp) then
    -- A corrupt entry (not of the forms above, by hand or a flipped byte) counts
    -- as a provisional one of sequence 0 without a member or stamp: any set
    -- overwrites it, and a reader's drop of exactly it removes it.
    curseq, curmember, stamp, stampstr, mark = '0', '', nil, nil, '@'
  end
end
if mode == 'x' then
  if ARGV[3] == '0' or not cur then
    redis.call('ZREM', KEYS[3], id)
  else
    redis.call('ZADD', KEYS[3], ARGV[3], id)
  end
  return 0
end
if mode == 'p' then
  if curmember ~= '' then
    local ms = ARGV[4]
    if stamp and stamp > tonumber(ms) then ms = stampstr end
    redis.call('HSET', KEYS[2], id, curseq .. mark .. ms .. '|' .. curmember)
    return ''
  end
  if not cur then curseq = '0' end
  local entry = curseq .. '@' .. ARGV[4] .. '|' .. member
  redis.call('ZADD', KEYS[1], 0, member)
  redis.call('HSET', KEYS[2], id, entry)
  return entry
elseif mode == 'd' then
  if not cur then
    redis.call('ZREM', KEYS[3], id) -- nothing to drop but an expiry index member
    return 0
  end
  if cur ~= ARGV[3] then return 0 end
  if stamp and stamp >= tonumber(ARGV[4]) then return 0 end
  if curmember ~= '' then redis.call('ZREM', KEYS[1], curmember) end
  redis.call('HDEL', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  return 1
end
local seq, cseq = tonumber(ARGV[4]), tonumber(curseq)
if not (seq > cseq or (member == '' and seq == cseq)) then
  local changed = 0
  if member ~= '' and seq == cseq and member == curmember then
    -- the entry is already this set's: put its member back in the order if it
    -- was lost (deleted by hand, or in a failover), as ReindexRun asks
    changed = redis.call('ZADD', KEYS[1], 0, member)
  end
  if member ~= '' and mark == '#' and stamp == tonumber(ARGV[5]) then
    -- a later write set the entry: this write no longer needs its stamp
    redis.call('HSET', KEYS[2], id, curseq .. '|' .. curmember)
  end
  return changed
end
if member == '' and stamp and stamp >= tonumber(ARGV[5]) then return 0 end
if curmember ~= '' and curmember ~= member then redis.call('ZREM', KEYS[1], curmember) end
if member == '' then
  redis.call('HDEL', KEYS[2], id) -- no tombstone: readers filter by the truth
  redis.call('ZREM', KEYS[3], id)
  return 1
end
redis.call('ZADD', KEYS[1], 0, member)
if ARGV[6] == '0' then
  redis.call('ZREM', KEYS[3], id)
else
  redis.call('ZADD', KEYS[3], ARGV[6], id)
end
local keep = ''
if stamp and stamp ~= tonumber(ARGV[5]) then keep = '#' .. stampstr end
redis.call('HSET', KEYS[2], id, ARGV[4] .. keep .. '|' .. member)
return 1
