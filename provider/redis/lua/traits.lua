-- traits: store or read a pipeline's traits. Every call first removes at most
-- 100 traits expired by the caller's clock (see "Clocks" in the package doc), so
-- no call's work grows with the expired traits a hash holds, and reads go through
-- the expiry index to the live traits only. Pruning is strict at µs granularity,
-- so a live trait is never pruned; the caller filters what it reads exactly.
-- KEYS[1] = traits hash: trait type -> "<expiry unix µs, 0 = never>|<JSON>"
-- KEYS[2] = expiry index: sorted set trait type -> expiry µs (+inf = never), one
--           member per field of KEYS[1]; a hash without it (written by a version
--           that kept none, or one key of the two evicted) is indexed again first,
--           and so is one whose index a version that kept none left stale (found
--           when an expired entry disagrees with the hash, which is the truth)
-- ARGV[1] = now µs, ARGV[2] = trait type ("" with "get": all)
-- ARGV[3] = "put" or "get"; for "put", ARGV[4] = expiry µs (0 = never), ARGV[5] = JSON;
-- for "get" of all traits, ARGV[4] = the most traits the caller reads by HSCAN
-- Returns 1 for "put"; for "get" of one trait, its value "<expiry µs>|<JSON>" if
-- live at µs granularity; for "get" of all, a flag and values: when fewer than 100
-- were pruned, every value of the hash (none is expired by the index then), after
-- "1" if they are at most ARGV[4] (the caller may read by HSCAN next time), else
-- "0"; otherwise "0" and the values of the traits live at µs granularity. The
-- caller filters exactly.
-- Expiries stay decimal strings: Redis turns a Lua number into an argument with
-- 14 significant digits, too few for µs.
local function expiry(v)
  return string.sub(v, 1, string.find(v, '|', 1, true) - 1)
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
-- on each, and returns how many; otherwise (the index is stale: a version that
-- kept none renewed, added or removed a trait while the sizes stayed equal) it
-- removes nothing and returns false.
local function prune()
  local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0, 100)
  if #gone == 0 then return 0 end
  local vals = redis.call('HMGET', KEYS[1], unpack(gone))
  for i = 1, #gone do
    local e = vals[i] and expiry(vals[i])
    if not e or e == '0' or tonumber(e) >= tonumber(ARGV[1]) then return false end
  end
  redis.call('HDEL', KEYS[1], unpack(gone))
  redis.call('ZREM', KEYS[2], unpack(gone))
  return #gone
end
if redis.call('ZCARD', KEYS[2]) ~= redis.call('HLEN', KEYS[1]) then index() end
local pruned = prune()
if not pruned then
  index()
  pruned = prune() or 100
end
if ARGV[3] == 'put' then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[4] .. '|' .. ARGV[5])
  redis.call('ZADD', KEYS[2], score(ARGV[4]), ARGV[2])
  return 1
end
if ARGV[2] ~= '' then
  local v = redis.call('HGET', KEYS[1], ARGV[2])
  if not v then return {} end
  local e = tonumber(expiry(v))
  if e > 0 and e < tonumber(ARGV[1]) then
    redis.call('HDEL', KEYS[1], ARGV[2])
    redis.call('ZREM', KEYS[2], ARGV[2])
    return {}
  end
  return {v}
end
-- Fewer than 100 pruned: the index lists no expired trait any more, so the
-- hash's values are the live traits (and any a stale index missed, which the
-- caller filters). Otherwise more may wait: read the live ones through the index.
if pruned < 100 then
  local vals = redis.call('HVALS', KEYS[1])
  local flag = '0'
  if #vals <= tonumber(ARGV[4]) then flag = '1' end
  table.insert(vals, 1, flag)
  return vals
end
local live = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], '+inf')
local out = {'0'}
for i = 1, #live, 1000 do
  local vals = redis.call('HMGET', KEYS[1], unpack(live, i, math.min(i + 999, #live)))
  for j = 1, #vals do
    if vals[j] then out[#out + 1] = vals[j] end
  end
end
return out
