-- run_cas: compare-and-swap a run's state on its version, once per call: the call's
-- marker is kept for the call memory after a swap, so a call the client retried
-- after a lost reply reports its swap again and swaps nothing more, even when
-- another write followed its first attempt. Versions are compared and stored as the
-- decimal strings the caller passes (no Lua number arithmetic, so every version up
-- to types.MaxRunVersion is exact). An expired run (now >= x) is missing; a swap
-- restarts the run's retention (x and the key's server TTL, as record_put.lua).
-- KEYS[1] = run hash (fields v = version, p = pipeline, j = JSON, x = expiry µs,
-- ...), KEYS[2] = the call's marker (same slot)
-- ARGV[1] = expected version, ARGV[2] = pipeline of the new state, ARGV[3] = new
-- JSON, ARGV[4] = new version (expected + 1), ARGV[5] = marker TTL in ms,
-- ARGV[6] = now µs, ARGV[7] = new expiry µs ("0": never), ARGV[8] = server TTL in
-- ms ("0": none)
-- ARGV[9] = "known": swap only if the stored run is known to have its
-- active-runs entry (field a equals its version v: its last write, by this
-- version, stored an unfinished status after an entry was added), else return
-- -3 writing nothing, for the caller to add the entry first; "any": swap
-- whatever a says (the caller added the entry, or the new status is finished)
-- ARGV[10] = the new field a: the new version when the new status is
-- unfinished, "" when finished (see "Active runs" in the package doc)
-- KEYS[3] = the fence memory, ARGV[11], ARGV[12] = the lease key and fence
-- ('' unfenced; see fence.lua). A fenced swap's fence is checked after the
-- call's marker, the run's existence and its pipeline (as memory's CAS) and
-- before the version, so a stale holder is refused as fenced, not answered 0.
-- Every swap makes the memory live as long as the run (fence_kept).
-- A swap bumps the run's sequence s (as every write of a record does: its list
-- entries are set by it, see index.go) and returns it.
-- Returns the new sequence (>= 1) swapped, 0 missing, expired or version
-- mismatch, -1 pipeline mismatch, {-2, newest} refused by the fence, -3 (mode
-- "known") the run's entry is not known: nothing written, no marker kept.
local done = redis.call('GET', KEYS[2])
if done then return tonumber(done) or 1 end
local cur = redis.call('HMGET', KEYS[1], 'v', 'p', 'x', 'a')
if not cur[1] then return 0 end
if not record_live(cur[3], ARGV[6]) then return 0 end
if cur[2] ~= ARGV[2] then return -1 end
local newest = fence_refused(2)
if newest then return {-2, newest} end
if cur[1] ~= ARGV[1] then return 0 end
if ARGV[9] == 'known' and cur[4] ~= cur[1] then return -3 end
local seq = record_next_seq(KEYS[1], true, ARGV[6])
redis.call('HSET', KEYS[1], 'v', ARGV[4], 'j', ARGV[3], 'x', ARGV[7], 's', string.format('%d', seq), 'a', ARGV[10])
if ARGV[8] == '0' then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[8])
end
fence_kept(ARGV[8])
redis.call('SET', KEYS[2], string.format('%d', seq), 'PX', ARGV[5])
return seq
