-- record_del: delete the truth of an indexed record, keeping its sequence so that
-- index changes stay ordered.
-- KEYS[1] = record hash
-- Returns the new seq, or 0 when there was nothing to delete.
if redis.call('HEXISTS', KEYS[1], 'j') == 0 then return 0 end
local seq = redis.call('HINCRBY', KEYS[1], 's', 1)
redis.call('HDEL', KEYS[1], 'j')
redis.call('HSET', KEYS[1], 'm', '')
return seq
