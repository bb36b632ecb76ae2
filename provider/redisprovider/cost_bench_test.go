package redisprovider_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/testkit/benchpair"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
)

// BenchmarkServerCost takes the Redis provider's write scripts apart, to show
// where their server time goes: each step adds one part of what the library's
// script does to a bare script, and runs beside the plain command (raw), with 64
// goroutines on REDIS_ADDR, reporting the server's CPU time per call of each
// (server-cpu-us/op, raw-server-cpu-us/op):
//
//	append/lua          XADD from a script: the cost of running a script at all
//	append/lua+marker   and the call's marker key set NX first (AppendEvent's script)
//	cas/lua             a CAS script comparing the version (HGET, HSET)
//	cas/lua+marker      and the call's marker checked first and set after a swap
//	                    (CompareAndSwapRunState's script, less its pipeline check)
//
//	go test -run '^$' -bench BenchmarkServerCost -benchtime 20000x ./provider/redisprovider/
func BenchmarkServerCost(b *testing.B) {
	addr := envAddr()
	if addr == "" {
		b.Skip("REDIS_ADDR is not set")
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	const workers = 64
	value := strings.Repeat("x", 200)
	const marker = `if not redis.call('SET', KEYS[2], 1, 'NX', 'PX', 120000) then return 0 end `
	const cas = `if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[1]) + 1, 'j', ARGV[2]) `
	for _, v := range []struct {
		name, script string
		cas          bool
	}{
		{"append/lua", `redis.call('XADD', KEYS[1], 'MAXLEN', '~', 100000, '*', 'e', ARGV[1]) return 1`, false},
		{"append/lua+marker", marker + `redis.call('XADD', KEYS[1], 'MAXLEN', '~', 100000, '*', 'e', ARGV[1]) return 1`, false},
		{"cas/lua", cas + `return 1`, true},
		{"cas/lua+marker", `if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end ` + cas +
			`redis.call('SET', KEYS[2], 1, 'PX', 120000) return 1`, true},
	} {
		b.Run(v.name, func(b *testing.B) {
			s := goredis.NewScript(v.script)
			if err := s.Load(ctx, c).Err(); err != nil {
				b.Fatal(err)
			}
			key := newBenchEnv(b, c).raw("{" + v.name + "}")
			versions := make([]int, workers)
			lib := func(w, _ int) error {
				if !v.cas {
					return s.EvalSha(ctx, c, []string{key, key + ":call:" + ids.Random()}, value).Err()
				}
				err := s.EvalSha(ctx, c, []string{key + ":" + strconv.Itoa(w), key + ":call:" + ids.Random()}, versions[w], value).Err()
				versions[w]++
				return err
			}
			raw := func(w, i int) error {
				if v.cas {
					return c.HSet(ctx, key+":raw:"+strconv.Itoa(w), "v", i, "j", value).Err()
				}
				return c.XAdd(ctx, &goredis.XAddArgs{Stream: key + ":raw", MaxLen: 100000, Approx: true, Values: []any{"e", value}}).Err()
			}
			benchpair.RunParallel(b, workers, lib, raw, testenv.RedisServerCPU(c))
		})
	}
}
