-- lock_release: delete a lock or lease key only if it is held by exactly the given
-- holder: for a lock the value's owner part (before the "\n" that precedes the
-- nonce) must equal "lock:<owner>", for a lease the value must equal
-- "lease:<token>" (never a prefix match: owner "w-1" must not free w-10's lock).
-- The call's marker, named by its own nonce, is checked first and kept for the call
-- memory after a release, so a call the client retried after a lost reply reports
-- its release and frees nothing more: not a hold the same owner took since.
-- KEYS[1] = lock key, KEYS[2] = the call's marker (same slot)
-- ARGV[1] = holder, ARGV[2] = marker TTL in ms
-- Returns 1 released, 0 not held.
if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local nl = string.find(v, '\n', 1, true)
if nl then v = string.sub(v, 1, nl - 1) end
if v ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], 1, 'PX', ARGV[2])
return 1
