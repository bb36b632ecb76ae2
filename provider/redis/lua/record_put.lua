-- record_put: write the truth of an indexed record and bump its sequence.
-- KEYS[1] = record hash (fields s = seq, m = list member, p = pipeline, j = JSON, ...)
-- ARGV[1] = member, ARGV[2] = JSON, ARGV[3] = pipeline ("" when not tracked)
-- ARGV[4] = "strict": refuse to change the stored pipeline; "move": allow it
-- ARGV[5..] = extra field/value pairs stored beside the JSON
-- Returns {seq, oldPipeline}; seq = -1 when refused (nothing written).
local old = redis.call('HGET', KEYS[1], 'p') or ''
if ARGV[4] == 'strict' and old ~= '' and old ~= ARGV[3] then
  return {-1, old}
end
local seq = redis.call('HINCRBY', KEYS[1], 's', 1)
redis.call('HSET', KEYS[1], 'm', ARGV[1], 'j', ARGV[2], 'p', ARGV[3], unpack(ARGV, 5))
return {seq, old}
