package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider/redis"
	"github.com/pipestate/pipestate/types"
)

// Each benchmark runs the provider call ("pipestate") beside the raw go-redis
// commands that do the same work ("raw"), on miniredis and, when REDIS_ADDR is
// set, on that server, so the library's overhead reads as a ratio:
//
//	go test -run '^$' -bench . -benchtime 2000x ./provider/redis/

// benchTarget is a server to benchmark against.
type benchTarget struct {
	name string
	c    *goredis.Client
}

func benchTargets(b *testing.B) []benchTarget {
	b.Helper()
	m := miniredis.RunT(b)
	mc := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	b.Cleanup(func() { _ = mc.Close() })
	ts := []benchTarget{{"miniredis", mc}}
	if addr := envAddr(); addr != "" {
		rc := goredis.NewClient(&goredis.Options{Addr: addr})
		b.Cleanup(func() { _ = rc.Close() })
		ts = append(ts, benchTarget{"redis", rc})
	}
	return ts
}

// bench runs pipestate and raw variants for every target. Each gets a fresh key
// prefix; setup prepares data for the provider and returns the loop bodies.
func bench(b *testing.B, setup func(b *testing.B, p *redis.Provider, c *goredis.Client, prefix string) (pipestate, raw func(i int) error)) {
	for _, tg := range benchTargets(b) {
		b.Run(tg.name, func(b *testing.B) {
			prefix := fmt.Sprintf("pstbench:%d", time.Now().UnixNano())
			b.Cleanup(func() {
				keys, _ := tg.c.Keys(context.Background(), prefix+"*").Result()
				if len(keys) > 0 {
					tg.c.Del(context.Background(), keys...)
				}
			})
			p, err := redis.New(tg.c, redis.WithKeyPrefix(prefix))
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			ps, raw := setup(b, p, tg.c, prefix)
			for _, v := range []struct {
				name string
				f    func(int) error
			}{{"pipestate", ps}, {"raw", raw}} {
				b.Run(v.name, func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; b.Loop(); i++ {
						if err := v.f(i); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// benchSink keeps the raw variants' decoded results alive.
var benchSink any

var rawCAS = goredis.NewScript(`
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[1]) + 1, 'j', ARGV[2])
return 1`)

func BenchmarkCAS(b *testing.B) {
	bench(b, func(b *testing.B, p *redis.Provider, c *goredis.Client, prefix string) (func(int) error, func(int) error) {
		ctx := context.Background()
		run := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunRunning, Metadata: map[string]any{"step": "load"}}
		if err := p.PutRunState(ctx, run); err != nil {
			b.Fatal(err)
		}
		version := 0
		rawKey := prefix + ":raw:run"
		c.HSet(ctx, rawKey, "v", 0)
		rawVersion := 0
		return func(int) error {
				ok, err := p.CompareAndSwapRunState(ctx, "r", version, run)
				if err == nil && !ok {
					err = fmt.Errorf("CAS from %d lost", version)
				}
				version++
				return err
			}, func(int) error {
				run.Version, run.UpdatedAt = rawVersion+1, time.Now()
				data, _ := json.Marshal(run)
				n, err := rawCAS.Run(ctx, c, []string{rawKey}, rawVersion, data).Int64()
				if err == nil && n != 1 {
					err = fmt.Errorf("raw CAS from %d lost", rawVersion)
				}
				rawVersion++
				return err
			}
	})
}

func BenchmarkLock(b *testing.B) {
	bench(b, func(b *testing.B, p *redis.Provider, c *goredis.Client, prefix string) (func(int) error, func(int) error) {
		ctx := context.Background()
		return func(int) error {
				ok, err := p.AcquireLock(ctx, "bench", time.Minute)
				if err != nil || !ok {
					return fmt.Errorf("AcquireLock = %v, %v", ok, err)
				}
				return p.ReleaseLock(ctx, "bench")
			}, func(int) error {
				if err := c.SetArgs(ctx, prefix+":raw:lock", "owner", goredis.SetArgs{Mode: "NX", TTL: time.Minute}).Err(); err != nil {
					return err
				}
				return c.Del(ctx, prefix+":raw:lock").Err()
			}
	})
}

func benchEvent(i int) types.Event {
	return types.Event{Kind: "RUN_STATE_CHANGED", PipelineID: "p", RunID: "r", Status: "RUNNING",
		Details: map[string]any{"i": i}, Timestamp: time.Now()}
}

func BenchmarkAppendEvent(b *testing.B) {
	bench(b, func(b *testing.B, p *redis.Provider, c *goredis.Client, prefix string) (func(int) error, func(int) error) {
		ctx := context.Background()
		return func(i int) error { return p.AppendEvent(ctx, benchEvent(i)) },
			func(i int) error {
				data, _ := json.Marshal(benchEvent(i))
				return c.XAdd(ctx, &goredis.XAddArgs{Stream: prefix + ":raw:events", MaxLen: redis.DefaultMaxEvents, Approx: true,
					Values: []any{"e", data}}).Err()
			}
	})
}

func BenchmarkReadEventsSince100(b *testing.B) {
	bench(b, func(b *testing.B, p *redis.Provider, c *goredis.Client, prefix string) (func(int) error, func(int) error) {
		ctx := context.Background()
		for i := range 100 {
			data, _ := json.Marshal(benchEvent(i))
			c.XAdd(ctx, &goredis.XAddArgs{Stream: prefix + ":raw:events", Values: []any{"e", data}})
			if err := p.AppendEvent(ctx, benchEvent(i)); err != nil {
				b.Fatal(err)
			}
		}
		return func(int) error {
				recs, err := p.ReadEventsSince(ctx, "p", "", 100)
				if err == nil && len(recs) != 100 {
					err = fmt.Errorf("read %d events", len(recs))
				}
				return err
			}, func(int) error {
				msgs, err := c.XRangeN(ctx, prefix+":raw:events", "-", "+", 100).Result()
				if err != nil {
					return err
				}
				out := make([]types.EventRecord, len(msgs))
				for i, m := range msgs {
					out[i].StreamID = m.ID
					if err := json.Unmarshal([]byte(m.Values["e"].(string)), &out[i].Event); err != nil {
						return err
					}
				}
				benchSink = out
				return nil
			}
	})
}

func BenchmarkGetTraits(b *testing.B) {
	bench(b, func(b *testing.B, p *redis.Provider, c *goredis.Client, prefix string) (func(int) error, func(int) error) {
		ctx := context.Background()
		for i := range 10 {
			tr := types.TraitEvaluation{PipelineID: "p", TraitType: fmt.Sprintf("trait-%d", i), Status: types.TraitPass,
				Value: map[string]any{"rows": 1000 + i}, EvaluatedAt: time.Now()}
			if err := p.PutTrait(ctx, "p", tr, time.Hour); err != nil {
				b.Fatal(err)
			}
			data, _ := json.Marshal(tr)
			c.HSet(ctx, prefix+":raw:traits", tr.TraitType, data)
		}
		return func(int) error {
				ts, err := p.GetTraits(ctx, "p")
				if err == nil && len(ts) != 10 {
					err = fmt.Errorf("got %d traits", len(ts))
				}
				return err
			}, func(int) error {
				m, err := c.HGetAll(ctx, prefix+":raw:traits").Result()
				if err != nil {
					return err
				}
				out := make([]types.TraitEvaluation, 0, len(m))
				for _, v := range m {
					var tr types.TraitEvaluation
					if err := json.Unmarshal([]byte(v), &tr); err != nil {
						return err
					}
					out = append(out, tr)
				}
				benchSink = out
				return nil
			}
	})
}

// BenchmarkFollowLatency measures the delay from AppendEvent returning to a
// follower of the pipeline receiving the event (0 when the follower was first), and
// from the call to the follower receiving it, one event in flight at a time, and
// reports the median and 99th percentile of each in microseconds:
//
//	go test -run '^$' -bench FollowLatency -benchtime 5000x ./provider/redis/
func BenchmarkFollowLatency(b *testing.B) {
	for _, tg := range benchTargets(b) {
		b.Run(tg.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			prefix := fmt.Sprintf("pstbench:%d", time.Now().UnixNano())
			b.Cleanup(func() { tg.c.Del(context.Background(), prefix+":{p}:events", prefix+":{p}:appends") })
			p, err := redis.New(tg.c, redis.WithKeyPrefix(prefix))
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Start(ctx); err != nil {
				b.Fatal(err)
			}
			arrived := make(chan time.Time, 1)
			go func() {
				for _, err := range p.FollowEvents(ctx, "p", "") {
					if err != nil {
						return
					}
					arrived <- time.Now()
				}
			}()
			var afterReturn, fromCall []time.Duration
			for i := 0; b.Loop(); i++ {
				called := time.Now()
				if err := p.AppendEvent(ctx, benchEvent(i)); err != nil {
					b.Fatal(err)
				}
				returned := time.Now()
				select {
				case at := <-arrived:
					afterReturn = append(afterReturn, max(0, at.Sub(returned)))
					fromCall = append(fromCall, at.Sub(called))
				case <-time.After(10 * time.Second):
					b.Fatal("the follower did not receive the event within 10s")
				}
			}
			for _, d := range []struct {
				name string
				ds   []time.Duration
			}{{"after-return", afterReturn}, {"from-call", fromCall}} {
				slices.Sort(d.ds)
				b.ReportMetric(float64(d.ds[len(d.ds)/2])/1e3, "p50-"+d.name+"-µs")
				b.ReportMetric(float64(d.ds[len(d.ds)*99/100])/1e3, "p99-"+d.name+"-µs")
			}
		})
	}
}
