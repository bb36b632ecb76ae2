-- record_del: delete the truth of an indexed record, keeping its sequence so that
-- index changes stay ordered, once per call: the call's marker keeps the new
-- sequence for the call memory, so a call the client retried after a lost reply
-- returns it and deletes nothing more (a record written in between stays).
-- The tombstone left (fields s and m) expires after ARGV[2] ms: its sequence only
-- orders the list changes of writes in flight, which end far sooner.
-- KEYS[1] = record hash, KEYS[2] = the call's marker (same slot)
-- ARGV[1] = marker TTL in ms, ARGV[2] = tombstone TTL in ms, ARGV[3] = now µs
-- (a corrupt s restarts above every sequence the lists may hold: lua/record.lua)
-- Returns the new seq, or 0 when there was nothing to delete.
local done = redis.call('GET', KEYS[2])
if done then return tonumber(done) end
if redis.call('HEXISTS', KEYS[1], 'j') == 0 then return 0 end
local seq = record_next_seq(KEYS[1], true, ARGV[3])
redis.call('HSET', KEYS[1], 's', string.format('%d', seq))
redis.call('HDEL', KEYS[1], 'j')
redis.call('HSET', KEYS[1], 'm', '')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], string.format('%d', seq), 'PX', ARGV[1])
return seq
