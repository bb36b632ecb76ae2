-- Float64SumStore: ARGV[3] is the delta (a finite float). INCRBYFLOAT fails without
-- writing when the sum would be NaN or infinite or the value is not a number.
redis.call('INCRBYFLOAT', KEYS[1], ARGV[3])
return finish()
