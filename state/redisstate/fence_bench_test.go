package redisstate_test

import (
	"context"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/types"
)

// BenchmarkFencedWrite compares an Int64SumStore MergeUpdate through
// state.Fenced with an unfenced one, side by side, on the server in REDIS_ADDR:
// ns/op is the client's time, server-µs/call the server's CPU per script call
// (INFO commandstats, usec_per_call of EVALSHA, reset before each).
//
//	REDIS_ADDR=localhost:6379 go test -run '^$' -bench BenchmarkFencedWrite -benchtime 20000x ./state/redisstate/
func BenchmarkFencedWrite(b *testing.B) {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		b.Skip("REDIS_ADDR is not set")
	}
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	b.Cleanup(func() { _ = c.Close() })
	s, err := redisstate.NewInt64SumStore(c, "bench-fence")
	if err != nil {
		b.Fatal(err)
	}
	fs, err := state.Fenced[int64](s, types.Lease{Key: "job", Token: "t", Fence: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name string
		s    state.Store[int64]
		once state.Store[int64] // writes the key once before (loading the script)
	}{
		{"unfenced", s, s},
		{"fenced", fs, fs},
		// unfenced merges of a key a fence wrote once: each keeps its memory
		// alive (fence_remember)
		{"unfenced-after-fenced", s, fs},
	} {
		b.Run("MergeUpdate/"+v.name, func(b *testing.B) {
			k := state.Key{Entity: "bench-" + v.name, Bucket: 1}
			if err := v.once.MergeUpdate(ctx, k, 1, time.Hour); err != nil {
				b.Fatal(err)
			}
			if err := v.s.MergeUpdate(ctx, k, 1, time.Hour); err != nil { // loads the script
				b.Fatal(err)
			}
			testenv.ResetCommandStats(b, c)
			b.ResetTimer()
			for range b.N {
				if err := v.s.MergeUpdate(ctx, k, 1, time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(testenv.EvalshaUsec(b, c), "server-µs/call")
		})
	}
}
