package tiered

import goredis "github.com/redis/go-redis/v9"

// WriteThroughUnconditionally breaks the tier for its teeth: every write-through
// and fill replaces the entry, however new. It returns the repair.
func WriteThroughUnconditionally() (restore func()) {
	old := putScript
	putScript = goredis.NewScript(`
redis.call('HSET', KEYS[1], 'r', ARGV[1], 'v', ARGV[2], 'o', ARGV[3], 'x', ARGV[4], 'f', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1`)
	return func() { putScript = old }
}
