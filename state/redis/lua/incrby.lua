-- Int64SumStore: ARGV[3] is the delta (a base-10 int64). INCRBY fails without writing
-- on overflow or a non-integer value.
redis.call('INCRBY', KEYS[1], ARGV[3])
return finish()
