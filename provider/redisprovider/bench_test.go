package redisprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/testkit/benchpair"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// Each paired benchmark measures the provider call beside the raw go-redis
// commands that do the same work (benchpair: interleaved rounds, the ratio of
// their medians), on miniredis and, when REDIS_ADDR is set, on that server, one
// goroutine at a time ("seq") and with 64 at once ("parallel64"):
//
//	go test -run '^$' -bench . -benchtime 2000x ./provider/redisprovider/

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

// benchEnv is one benchmark's provider, on a fresh key prefix of its target, whose
// keys are deleted when the benchmark ends; raw(name) is a key of the raw code
// under the same prefix.
type benchEnv struct {
	p      *redisprovider.Provider
	c      *goredis.Client
	prefix string
}

func (e benchEnv) raw(name string) string { return e.prefix + ":raw:" + name }

func newBenchEnv(b *testing.B, c *goredis.Client, opts ...redisprovider.Option) benchEnv {
	b.Helper()
	prefix := fmt.Sprintf("pstbench:%d", time.Now().UnixNano())
	b.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			if batch = append(batch, iter.Val()); len(batch) == 1000 {
				c.Unlink(ctx, batch...)
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			c.Unlink(ctx, batch...)
		}
	})
	p, err := redisprovider.New(c, append([]redisprovider.Option{redisprovider.WithKeyPrefix(prefix)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return benchEnv{p, c, prefix}
}

// pairSetup prepares the data of a paired benchmark for workers goroutines and
// returns the library call and the raw code; calls of different workers w must not
// conflict.
type pairSetup func(b *testing.B, e benchEnv, workers int) (lib, raw func(w, i int) error)

// benchPair runs setup's pair on every target, sequentially and with 64 goroutines;
// on a real server it also reports the server's CPU time per call of each side.
func benchPair(b *testing.B, setup pairSetup) {
	for _, tg := range benchTargets(b) {
		b.Run(tg.name, func(b *testing.B) {
			var meters []benchpair.Meter
			if tg.name == "redis" {
				meters = append(meters, testenv.RedisServerCPU(tg.c))
			}
			benchpair.Modes(b, []int{1, 64}, func(b *testing.B, workers int) (lib, raw func(w, i int) error) {
				return setup(b, newBenchEnv(b, tg.c), workers)
			}, meters...)
		})
	}
}

var rawCAS = goredis.NewScript(`
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[1]) + 1, 'j', ARGV[2])
return 1`)

func benchRun(w int) types.RunState {
	return types.RunState{RunID: "r" + strconv.Itoa(w), PipelineID: "p", Status: types.RunRunning, Metadata: map[string]any{"step": "load"}}
}

func BenchmarkCAS(b *testing.B) {
	casPair(b, "run:%d", func(ctx context.Context, c *goredis.Client, key string, version int, data []byte) (int64, error) {
		return rawCAS.Run(ctx, c, []string{key}, version, data).Int64()
	})
}

// casPair is the pair of BenchmarkCAS and BenchmarkCASCareful: the library's CAS
// beside raw, a hand-written CAS of the raw run at key from version to version+1
// with the run's JSON, which answers 1 when it swapped. Worker w's raw run is the
// hash e.raw(fmt.Sprintf(keyFormat, w)), created at version 0.
func casPair(b *testing.B, keyFormat string, raw func(ctx context.Context, c *goredis.Client, key string, version int, data []byte) (int64, error)) {
	benchPair(b, func(b *testing.B, e benchEnv, workers int) (func(int, int) error, func(int, int) error) {
		ctx := context.Background()
		version := make([]int, workers)
		rawVersion := make([]int, workers)
		for w := range workers {
			if err := e.p.PutRunState(ctx, benchRun(w)); err != nil {
				b.Fatal(err)
			}
			e.c.HSet(ctx, e.raw(fmt.Sprintf(keyFormat, w)), "v", 0)
		}
		return func(w, _ int) error {
				ok, err := e.p.CompareAndSwapRunState(ctx, "r"+strconv.Itoa(w), version[w], benchRun(w))
				if err == nil && !ok {
					err = fmt.Errorf("CAS from %d lost", version[w])
				}
				version[w]++
				return err
			}, func(w, _ int) error {
				run := benchRun(w)
				run.Version, run.UpdatedAt = rawVersion[w]+1, time.Now()
				data, err := json.Marshal(run)
				if err != nil {
					return err
				}
				n, err := raw(ctx, e.c, e.raw(fmt.Sprintf(keyFormat, w)), rawVersion[w], data)
				if err == nil && n != 1 {
					err = fmt.Errorf("raw CAS from %d lost", rawVersion[w])
				}
				rawVersion[w]++
				return err
			}
	})
}

// The careful floors: what a careful engineer would write by hand to keep the
// library's lost-reply guarantee (a call the client retried after a lost reply
// reports its first attempt's outcome and changes nothing more, even when other
// writes came in between), with a marker key per call in the record's hash slot,
// kept for two minutes. BenchmarkCASCareful, BenchmarkLockCareful and
// BenchmarkAppendEventCareful put the library beside them; against raw, the same
// floors give the price of the guarantee itself.
var (
	carefulCAS = goredis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[1]) + 1, 'j', ARGV[2])
redis.call('SET', KEYS[2], 1, 'PX', 120000)
return 1`)
	carefulAcquire = goredis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
redis.call('SET', KEYS[2], 1, 'PX', 120000)
return 1`)
	carefulRelease = goredis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], 1, 'PX', 120000)
return 1`)
	carefulAppend = goredis.NewScript(`
if not redis.call('SET', KEYS[2], 1, 'NX', 'PX', 120000) then return 0 end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'e', ARGV[1])
return 1`)
)

// carefulMarker is the marker key of one call of the careful floors: in key's
// hash slot, named by a fresh token.
func carefulMarker(key string) string { return key + ":call:" + ids.Random() }

func BenchmarkCASCareful(b *testing.B) {
	casPair(b, "{run:%d}", func(ctx context.Context, c *goredis.Client, key string, version int, data []byte) (int64, error) {
		return carefulCAS.Run(ctx, c, []string{key, carefulMarker(key)}, version, data).Int64()
	})
}

// lockAndRelease is the library side of BenchmarkLock and BenchmarkLockCareful:
// worker w takes and frees its own lock.
func lockAndRelease(ctx context.Context, p *redisprovider.Provider) func(w, _ int) error {
	return func(w, _ int) error {
		key := "bench-" + strconv.Itoa(w)
		ok, err := p.AcquireLock(ctx, key, time.Minute)
		if err != nil || !ok {
			return fmt.Errorf("AcquireLock = %v, %v", ok, err)
		}
		return p.ReleaseLock(ctx, key)
	}
}

func BenchmarkLockCareful(b *testing.B) {
	benchPair(b, func(b *testing.B, e benchEnv, workers int) (func(int, int) error, func(int, int) error) {
		ctx := context.Background()
		owner := e.p.Owner()
		return lockAndRelease(ctx, e.p), func(w, _ int) error {
			key := e.raw("{lock:" + strconv.Itoa(w) + "}")
			value := owner + "\n" + ids.Random()
			n, err := carefulAcquire.Run(ctx, e.c, []string{key, carefulMarker(key)}, value, time.Minute.Milliseconds()).Int64()
			if err == nil && n != 1 {
				err = errors.New("careful lock not acquired")
			}
			if err != nil {
				return err
			}
			n, err = carefulRelease.Run(ctx, e.c, []string{key, carefulMarker(key)}, value).Int64()
			if err == nil && n != 1 {
				err = errors.New("careful lock not held")
			}
			return err
		}
	})
}

func BenchmarkAppendEventCareful(b *testing.B) {
	benchPair(b, func(b *testing.B, e benchEnv, workers int) (func(int, int) error, func(int, int) error) {
		ctx := context.Background()
		key := e.raw("{events}")
		return func(_, i int) error { return e.p.AppendEvent(ctx, benchEvent(i)) },
			func(_, i int) error {
				data, err := json.Marshal(benchEvent(i))
				if err != nil {
					return err
				}
				return carefulAppend.Run(ctx, e.c, []string{key, carefulMarker(key)}, data, redisprovider.DefaultMaxEvents).Err()
			}
	})
}

func BenchmarkGetRunState(b *testing.B) {
	benchPair(b, func(b *testing.B, e benchEnv, workers int) (func(int, int) error, func(int, int) error) {
		ctx := context.Background()
		run := benchRun(0)
		if err := e.p.PutRunState(ctx, run); err != nil {
			b.Fatal(err)
		}
		data, _ := json.Marshal(run)
		e.c.HSet(ctx, e.raw("run"), "j", data)
		return func(int, int) error {
				r, err := e.p.GetRunState(ctx, "r0")
				if err == nil && r == nil {
					err = errors.New("no run")
				}
				return err
			}, func(int, int) error {
				s, err := e.c.HGet(ctx, e.raw("run"), "j").Result()
				if err != nil {
					return err
				}
				var r types.RunState
				if err := json.Unmarshal([]byte(s), &r); err != nil {
					return err
				}
				return nil
			}
	})
}

func BenchmarkLock(b *testing.B) {
	benchPair(b, func(b *testing.B, e benchEnv, workers int) (func(int, int) error, func(int, int) error) {
		ctx := context.Background()
		// The raw lock is the careful hand-written one: a value unique to the
		// holder, released only by that holder.
		release := goredis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
		owner := e.p.Owner()
		return lockAndRelease(ctx, e.p), func(w, _ int) error {
			key := e.raw("lock:" + strconv.Itoa(w))
			if err := e.c.SetArgs(ctx, key, owner, goredis.SetArgs{Mode: "NX", TTL: time.Minute}).Err(); err != nil {
				return err
			}
			n, err := release.Run(ctx, e.c, []string{key}, owner).Int64()
			if err == nil && n != 1 {
				err = errors.New("raw lock not held")
			}
			return err
		}
	})
}

func benchEvent(i int) types.Event {
	return types.Event{Kind: "RUN_STATE_CHANGED", PipelineID: "p", RunID: "r", Status: "RUNNING",
		Details: map[string]any{"i": i}, Timestamp: time.Now()}
}

func BenchmarkAppendEvent(b *testing.B) {
	benchPair(b, func(b *testing.B, e benchEnv, workers int) (func(int, int) error, func(int, int) error) {
		ctx := context.Background()
		return func(_, i int) error { return e.p.AppendEvent(ctx, benchEvent(i)) },
			func(_, i int) error {
				data, err := json.Marshal(benchEvent(i))
				if err != nil {
					return err
				}
				return e.c.XAdd(ctx, &goredis.XAddArgs{Stream: e.raw("events"), MaxLen: redisprovider.DefaultMaxEvents, Approx: true,
					Values: []any{"e", data}}).Err()
			}
	})
}

func BenchmarkReadEventsSince100(b *testing.B) {
	benchPair(b, func(b *testing.B, e benchEnv, workers int) (func(int, int) error, func(int, int) error) {
		ctx := context.Background()
		for i := range 100 {
			data, _ := json.Marshal(benchEvent(i))
			e.c.XAdd(ctx, &goredis.XAddArgs{Stream: e.raw("events"), Values: []any{"e", data}})
			if err := e.p.AppendEvent(ctx, benchEvent(i)); err != nil {
				b.Fatal(err)
			}
		}
		return func(int, int) error {
				recs, err := e.p.ReadEventsSince(ctx, "p", "", 100)
				if err == nil && len(recs) != 100 {
					err = fmt.Errorf("read %d events", len(recs))
				}
				return err
			}, func(int, int) error {
				msgs, err := e.c.XRangeN(ctx, e.raw("events"), "-", "+", 100).Result()
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
				runtime.KeepAlive(out)
				return nil
			}
	})
}

func BenchmarkGetTraits(b *testing.B) {
	benchPair(b, func(b *testing.B, e benchEnv, workers int) (func(int, int) error, func(int, int) error) {
		ctx := context.Background()
		for i := range 10 {
			tr := types.TraitEvaluation{PipelineID: "p", TraitType: fmt.Sprintf("trait-%d", i), Status: types.TraitPass,
				Value: map[string]any{"rows": 1000 + i}, EvaluatedAt: time.Now()}
			if err := e.p.PutTrait(ctx, "p", tr, time.Hour); err != nil {
				b.Fatal(err)
			}
			exp := time.Now().Add(time.Hour)
			tr.ExpiresAt = &exp
			data, _ := json.Marshal(tr)
			e.c.HSet(ctx, e.raw("traits"), tr.TraitType, data)
		}
		return func(int, int) error {
				ts, err := e.p.GetTraits(ctx, "p")
				if err == nil && len(ts) != 10 {
					err = fmt.Errorf("got %d traits", len(ts))
				}
				return err
			}, func(int, int) error {
				// The raw code filters expired traits as the library does.
				m, err := e.c.HGetAll(ctx, e.raw("traits")).Result()
				if err != nil {
					return err
				}
				now := time.Now()
				out := make([]types.TraitEvaluation, 0, len(m))
				for _, v := range m {
					var tr types.TraitEvaluation
					if err := json.Unmarshal([]byte(v), &tr); err != nil {
						return err
					}
					if tr.ExpiresAt == nil || now.Before(*tr.ExpiresAt) {
						out = append(out, tr)
					}
				}
				runtime.KeepAlive(out)
				return nil
			}
	})
}

// BenchmarkFollowLatency measures the delay from AppendEvent returning to a
// follower of the pipeline receiving the event (0 when the follower was first), and
// from the call to the follower receiving it, one event in flight at a time, and
// reports the median and 99th percentile of each in microseconds:
//
//	go test -run '^$' -bench FollowLatency -benchtime 5000x ./provider/redisprovider/
func BenchmarkFollowLatency(b *testing.B) {
	for _, tg := range benchTargets(b) {
		b.Run(tg.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := newBenchEnv(b, tg.c).p
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
