-- slot_put: upsert one (date, schedule) record and its place in the order set:
-- run logs and cascade markers. A script rather than MULTI/EXEC because go-redis
-- retries a script after a lost reply but not a transaction (the upsert is
-- idempotent, so a retry is harmless).
-- KEYS[1] = hash field -> JSON, KEYS[2] = sorted set of the same fields
-- ARGV[1] = field, ARGV[2] = JSON, ARGV[3] = score
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
