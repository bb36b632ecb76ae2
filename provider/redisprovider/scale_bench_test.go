package redisprovider_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// scaleSizes are the data sizes of BenchmarkScale: a call's time per call at the
// largest should stay within 1.5x of its time at the smallest.
var scaleSizes = []int{100, 100_000}

// BenchmarkScale measures calls whose cost must not grow with the data, on
// REDIS_ADDR, with scaleSizes entries written through the provider's own calls
// (64 at a time) before each size is measured:
//
//	go test -run '^$' -bench Scale -benchtime 2000x ./provider/redisprovider/
func BenchmarkScale(b *testing.B) {
	if envAddr() == "" {
		b.Skip("REDIS_ADDR is not set")
	}
	c := goredis.NewClient(&goredis.Options{Addr: envAddr()})
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	for _, bc := range []struct {
		name string
		// fill writes entry i of n; call is the measured call.
		fill func(e benchEnv, i int) error
		call func(e benchEnv) (func() error, error)
	}{
		{"ListRuns10", func(e benchEnv, i int) error {
			return e.p.PutRunState(ctx, types.RunState{RunID: "r" + strconv.Itoa(i), PipelineID: "p", Status: types.RunRunning,
				CreatedAt: base.Add(time.Duration(i) * time.Millisecond)})
		}, func(e benchEnv) (func() error, error) {
			return func() error { return wantLen(e.p.ListRuns(ctx, "p", 10))(10) }, nil
		}},
		{"ListEvents10", appendBenchEvent, func(e benchEnv) (func() error, error) {
			return func() error { return wantLen(e.p.ListEvents(ctx, "p", 10))(10) }, nil
		}},
		{"ReadEventsSinceRecent", appendBenchEvent, func(e benchEnv) (func() error, error) {
			// The cursor of the 11th newest event: each read returns the 10 after it.
			last, err := e.c.XRevRangeN(ctx, e.prefix+":{p}:events", "+", "-", 11).Result()
			if err != nil {
				return nil, err
			}
			cursor := last[len(last)-1].ID
			return func() error { return wantLen(e.p.ReadEventsSince(ctx, "p", cursor, 100))(10) }, nil
		}},
		{"GetTraitsExpired", func(e benchEnv, i int) error {
			// n traits that expired an hour ago, written by a clock two hours back
			return e.p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "old-" + strconv.Itoa(i), Status: types.TraitPass}, time.Hour)
		}, func(e benchEnv) (func() error, error) {
			live, err := redisprovider.New(e.c, redisprovider.WithKeyPrefix(e.prefix))
			if err != nil {
				return nil, err
			}
			for i := range 100 {
				tr := types.TraitEvaluation{TraitType: "live-" + strconv.Itoa(i), Status: types.TraitPass, Value: map[string]any{"rows": i}}
				if err := live.PutTrait(ctx, "p", tr, 24*time.Hour); err != nil {
					return nil, err
				}
			}
			return func() error { return wantLen(live.GetTraits(ctx, "p"))(100) }, nil
		}},
		{"ListAllReruns10", func(e benchEnv, i int) error {
			return e.p.PutRerun(ctx, types.RerunRecord{RerunID: "x" + strconv.Itoa(i), PipelineID: "p" + strconv.Itoa(i%10),
				OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: base.Add(time.Duration(i) * time.Millisecond)})
		}, func(e benchEnv) (func() error, error) {
			return func() error { return wantLen(e.p.ListAllReruns(ctx, 10))(10) }, nil
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for _, n := range scaleSizes {
				var opts []redisprovider.Option
				if bc.name == "GetTraitsExpired" {
					opts = append(opts, redisprovider.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) }))
				}
				e := newBenchEnv(b, c, opts...)
				if err := fillParallel(n, func(i int) error { return bc.fill(e, i) }); err != nil {
					b.Fatal(err)
				}
				call, err := bc.call(e)
				if err != nil {
					b.Fatal(err)
				}
				b.Run(strconv.Itoa(n), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if err := call(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

func appendBenchEvent(e benchEnv, i int) error {
	return e.p.AppendEvent(context.Background(), benchEvent(i))
}

// fillParallel calls fill(i) for i in 0..n-1 on 64 goroutines; the first error
// stops it.
func fillParallel(n int, fill func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 64 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fill(i); err != nil {
					select {
					case errs <- err:
					default:
					}
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// wantLen checks that a listing returned want entries.
func wantLen[T any](got []T, err error) func(want int) error {
	return func(want int) error {
		if err == nil && len(got) != want {
			err = fmt.Errorf("got %d entries, want %d", len(got), want)
		}
		return err
	}
}
