-- record_put: write the truth of an indexed record and bump its sequence, once per
-- call: the call's marker keeps the reply for the call memory, so a call the client
-- retried after a lost reply returns its first attempt's reply and writes nothing
-- more (a CAS, put or delete that came in between stays). The write restarts the
-- record's retention: field x holds its expiry by the writer's clock, which every
-- read and write judges (expired when now >= x), and the key gets a server TTL a
-- little longer, so the server deletes it after that.
-- KEYS[1] = record hash (fields s = seq, m = list member, p = pipeline, j = JSON,
--           x = expiry µs, "0" or absent: never, ...)
-- KEYS[2] = the call's marker "<seq>|<oldPipeline>" (same slot)
-- ARGV[1] = member, ARGV[2] = JSON, ARGV[3] = pipeline ("" when not tracked)
-- ARGV[4] = "strict": refuse to change the stored pipeline; "move": allow it;
--           "create": refuse when the record exists
-- ARGV[5] = marker TTL in ms, ARGV[6] = now µs, ARGV[7] = expiry µs ("0": never),
-- ARGV[8] = server TTL in ms ("0": none), ARGV[9..] = extra field/value pairs
-- stored beside the JSON
-- Then (see fence.lua) KEYS[3] = the fence memory (none for a pipeline), and
-- the lease key and fence after the pairs ('' unfenced). A fenced write's fence
-- is checked after the call's marker and a strict refusal (as memory's
-- PutRunState), before the create check, so a stale create is refused as
-- fenced; refused, it returns {-2, oldPipeline, newest}. Every write that
-- writes makes the memory live as long as the record (fence_kept).
-- An expired record counts as missing: "create" writes over it, "strict" lets it
-- change pipeline. (A deleted pipeline's tombstone, fields s and m, counts as
-- missing too.)
-- Returns {seq, oldPipeline}; seq = -1 when refused (nothing written, nothing kept:
-- a refusal's retry is refused again, as the record still exists or still belongs
-- to oldPipeline).
local done = redis.call('GET', KEYS[2])
if done then
  local bar = string.find(done, '|', 1, true)
  return {tonumber(string.sub(done, 1, bar - 1)), string.sub(done, bar + 1)}
end
local cur = redis.call('HMGET', KEYS[1], 'p', 'x')
local old = cur[1] or ''
local live = redis.call('EXISTS', KEYS[1]) == 1 and record_live(cur[2], ARGV[6])
if ARGV[4] == 'strict' and live and old ~= '' and old ~= ARGV[3] then
  return {-1, old}
end
local newest = fence_refused(2)
if newest then
  if not live then old = '' end
  return {-2, old, newest}
end
if ARGV[4] == 'create' and live then
  return {-1, old}
end
-- A record written anew (missing, or expired, perhaps deleted by the server while
-- its list entries stayed) starts its sequence at now µs at least: above every
-- sequence of its earlier life, which its list entries may still carry (they
-- would refuse a lower one), as long as that life had fewer writes than the
-- µs of its retention.
local seq = record_next_seq(KEYS[1], live, ARGV[6])
redis.call('HSET', KEYS[1], 's', string.format('%d', seq))
redis.call('HSET', KEYS[1], 'm', ARGV[1], 'j', ARGV[2], 'p', ARGV[3], 'x', ARGV[7], unpack(ARGV, 9, fence_args()))
if ARGV[8] == '0' then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[8])
end
fence_kept(ARGV[8])
redis.call('SET', KEYS[2], string.format('%d|%s', seq, old), 'PX', ARGV[5])
return {seq, old}
