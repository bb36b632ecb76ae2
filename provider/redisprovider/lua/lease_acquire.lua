-- lease_acquire: take a free lock key as a lease and draw the next fence, once per
-- call: the call's marker (named by the lease token) keeps the fence for the call
-- memory, so a call the client retried after a lost reply returns the fence it drew
-- and takes nothing more, even if its lease expired and was taken since.
-- KEYS[1] = lock key, KEYS[2] = fence counter (no TTL), KEYS[3] = the call's marker
-- (all one slot)
-- ARGV[1] = holder value "lease:<token>", ARGV[2] = ttl in ms, ARGV[3] = marker TTL
-- in ms
-- Returns the fence, or 0 when the key is held by another.
local done = redis.call('GET', KEYS[3])
if done then return tonumber(done) end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[3], string.format('%d', fence), 'PX', ARGV[3])
return fence
