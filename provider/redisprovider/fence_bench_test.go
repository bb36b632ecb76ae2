package redisprovider_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// BenchmarkFencedWrite compares a CompareAndSwapRunState through
// provider.Fenced with an unfenced one, side by side, on the server in
// REDIS_ADDR: ns/op is the client's time, server-µs/call the server's CPU per
// script call (INFO commandstats, usec_per_call of EVALSHA, reset before each).
//
//	REDIS_ADDR=localhost:6379 go test -run '^$' -bench BenchmarkFencedWrite -benchtime 20000x ./provider/redisprovider/
func BenchmarkFencedWrite(b *testing.B) {
	addr := envAddr()
	if addr == "" {
		b.Skip("REDIS_ADDR is not set")
	}
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	b.Cleanup(func() { _ = c.Close() })
	p, err := redisprovider.New(c, redisprovider.WithKeyPrefix("bench-fence"))
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	fp, err := provider.Fenced(p, types.Lease{Key: "job", Token: "t", Fence: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name string
		p    provider.Provider
	}{{"unfenced", p}, {"fenced", fp}} {
		b.Run("CompareAndSwapRunState/"+v.name, func(b *testing.B) {
			run := types.RunState{RunID: "bench-" + v.name, PipelineID: "bench", Status: types.RunRunning}
			if err := p.PutRunState(ctx, run); err != nil {
				b.Fatal(err)
			}
			version := 0
			// a first call loads what it needs before the statistics start
			if ok, err := v.p.CompareAndSwapRunState(ctx, run.RunID, version, run); err != nil || !ok {
				b.Fatalf("CAS = %v, %v", ok, err)
			}
			version++
			testenv.ResetCommandStats(b, c)
			b.ResetTimer()
			for range b.N {
				if ok, err := v.p.CompareAndSwapRunState(ctx, run.RunID, version, run); err != nil || !ok {
					b.Fatalf("CAS = %v, %v", ok, err)
				}
				version++
			}
			b.StopTimer()
			b.ReportMetric(testenv.EvalshaUsec(b, c), "server-µs/call")
		})
	}
}
