-- slot_put: upsert one (date, schedule) record and its place in the order set:
-- run logs and cascade markers. A script rather than MULTI/EXEC because go-redis
-- retries a script after a lost reply but not a transaction (the upsert is
-- idempotent, so a retry is harmless).
-- The write restarts the record's retention: its value is "<expiry µs>|<JSON>"
-- (the JSON alone never expires, as values written before retention), which
-- reads judge by their clock (expired when now >= the expiry), and its expiry is
-- its score in the expiry set. First it removes up to ARGV[7] records expired at
-- now, so the keys hold no more expired records than writes left behind; then
-- it gives the keys a server TTL that outlives their longest-lived record.
-- KEYS[1] = hash field -> value, KEYS[2] = order: sorted set of the same fields,
-- KEYS[3] = expiry set: sorted set field -> expiry µs (fields that never expire
-- are not in it)
-- ARGV[1] = field, ARGV[2] = JSON, ARGV[3] = score, ARGV[4] = now µs,
-- ARGV[5] = expiry µs ("0": never), ARGV[6] = server TTL in ms ("0": none),
-- ARGV[7] = the most expired records removed
-- KEYS[4] = the fence memory of the pipeline; ARGV's last two = the lease key
-- and fence ('' unfenced; see fence.lua). Fenced: KEYS[5] = the call's marker
-- (same slot), ARGV[8] = the marker's TTL in ms. A fenced upsert keeps a
-- marker, as record_put does, so that a retry after a lost reply reports its
-- first attempt's write, even after a newer fence wrote, and writes nothing
-- more; a refusal keeps none (its retry is refused again). Every upsert makes
-- the memory live as long as the keys then live (fence_kept: their resulting
-- TTL, which an earlier write may have made longer than this record's, as
-- append_once does for a late arrivals list).
-- Returns 1 written (or written by this call's first attempt), {-2, newest}
-- refused by the fence.
if fence_fenced() and redis.call('EXISTS', KEYS[5]) == 1 then return 1 end
local newest = fence_refused(3)
if newest then return {-2, newest} end
if fence_fenced() then redis.call('SET', KEYS[5], 1, 'PX', ARGV[8]) end
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[4], 'LIMIT', 0, ARGV[7])
if #gone > 0 then
  redis.call('HDEL', KEYS[1], unpack(gone))
  redis.call('ZREM', KEYS[2], unpack(gone))
  redis.call('ZREM', KEYS[3], unpack(gone))
end
local fresh = redis.call('EXISTS', KEYS[1]) == 0
if ARGV[5] == '0' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[5] .. '|' .. ARGV[2])
  redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
-- A hash without a TTL that was there before keeps records that never expire.
local ttl = redis.call('PTTL', KEYS[1])
local extend = ARGV[6] ~= '0' and ((ttl == -1 and fresh) or (ttl >= 0 and ttl < tonumber(ARGV[6])))
for i = 1, 3 do
  if ARGV[6] == '0' then
    redis.call('PERSIST', KEYS[i])
  elseif extend then
    redis.call('PEXPIRE', KEYS[i], ARGV[6])
  end
end
-- the memory lives as long as the keys, which may outlive this record
if ARGV[6] == '0' or (ttl == -1 and not extend) then
  fence_kept('0')
elseif extend then
  fence_kept(ARGV[6])
else
  fence_kept(tostring(ttl))
end
return 1
