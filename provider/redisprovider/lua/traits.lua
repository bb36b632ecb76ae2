-- traits: store a pipeline's trait (PutTrait). It first removes at most 100
-- traits expired by the caller's clock (see "Clocks" in the package doc), so the
-- expired traits a hash holds stay bounded by its writes, and the reads, which
-- never write (lua/traits_read.lua, or one HSCAN, or one HGET), go through the
-- expiry index to the live traits only. Pruning is strict at µs granularity, so a
-- live trait is never pruned.
-- KEYS[1] = traits hash: trait type -> "<expiry unix µs, 0 = never>|<JSON>"
-- KEYS[2] = expiry index: sorted set trait type -> expiry µs (+inf = never), one
--           member per field of KEYS[1]; a hash without it (written by a version
--           that kept none, or one key of the two evicted) is indexed again first,
--           and so is one whose index a version that kept none left stale (found
--           when an expired entry disagrees with the hash, which is the truth)
-- ARGV[1] = now µs, ARGV[2] = trait type, ARGV[3] = expiry µs (0 = never),
-- ARGV[4] = JSON
-- Returns 1.
-- Expiries stay decimal strings: Redis turns a Lua number into an argument with
-- 14 significant digits, too few for µs. A value not of that form (written by
-- hand) is kept as never expiring; the caller reports it as corrupt.
local function expiry(v)
  local bar = string.find(v, '|', 1, true)
  if not bar then return '0' end
  local e = string.sub(v, 1, bar - 1)
  if not tonumber(e) then return '0' end
  return e
end
local function score(e)
  if e == '0' then return '+inf' end
  return e
end
local function index()
  redis.call('DEL', KEYS[2])
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    redis.call('ZADD', KEYS[2], score(expiry(all[i + 1])), all[i])
  end
end
-- prune removes up to 100 traits the index lists as expired, if the hash agrees
-- on each, and returns true; otherwise (the index is stale: a version that kept
-- none renewed, added or removed a trait while the sizes stayed equal) it
-- removes nothing and returns false.
local function prune()
  local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0, 100)
  if #gone == 0 then return true end
  local vals = redis.call('HMGET', KEYS[1], unpack(gone))
  for i = 1, #gone do
    local e = vals[i] and expiry(vals[i])
    if not e or e == '0' or tonumber(e) >= tonumber(ARGV[1]) then return false end
  end
  redis.call('HDEL', KEYS[1], unpack(gone))
  redis.call('ZREM', KEYS[2], unpack(gone))
  return true
end
if redis.call('ZCARD', KEYS[2]) ~= redis.call('HLEN', KEYS[1]) then index() end
if not prune() then
  index()
  prune()
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3] .. '|' .. ARGV[4])
redis.call('ZADD', KEYS[2], score(ARGV[3]), ARGV[2])
return 1
