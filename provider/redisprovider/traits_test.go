package redisprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/types"
)

// traitTargets returns a client on miniredis and, with REDIS_ADDR, one on that
// server, each with a key prefix of the test's own.
func traitTargets(t *testing.T) map[string]func(t *testing.T) (*goredis.Client, string) {
	targets := map[string]func(t *testing.T) (*goredis.Client, string){
		"miniredis": func(t *testing.T) (*goredis.Client, string) {
			return goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()}), "t"
		},
	}
	if testenv.RedisWanted() {
		targets["redis"] = func(t *testing.T) (*goredis.Client, string) {
			return goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t)}), "pst:" + testenv.RedisPrefix(t)
		}
	}
	return targets
}

// settableClock is a clock that tests set.
type settableClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settableClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *settableClock) set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *settableClock) add(d time.Duration) { c.set(c.now().Add(d)) }

// TestTraitPruneBounded: expired traits are never returned, reads never remove
// them, and each PutTrait removes at most 100 of them, so the expired traits a
// pipeline's hash holds stay bounded by its writes.
func TestTraitPruneBounded(t *testing.T) {
	for name, target := range traitTargets(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, prefix := target(t)
			t.Cleanup(func() { _ = testenv.DeleteRedisPrefix(c, prefix); _ = c.Close() })
			clock := &settableClock{t: time.Date(2026, 1, 1, 0, 0, 0, 123_456_789, time.UTC)}
			p, err := New(c, WithKeyPrefix(prefix), WithClock(clock.now))
			must(t, err)
			put := func(typ string, ttl time.Duration) {
				t.Helper()
				must(t, p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: typ, Status: types.TraitPass}, ttl))
			}
			const expired = 250
			for i := range expired {
				put(fmt.Sprintf("old-%03d", i), time.Minute)
			}
			clock.add(time.Minute + time.Microsecond) // past their ExpiresAt
			put("forever", 0)
			put("hour", time.Hour)
			hash, exp := p.k.traits("p")
			sizes := func() (int64, int64) {
				return c.HLen(ctx, hash).Val(), c.ZCard(ctx, exp).Val()
			}
			// The put before the clock moved pruned nothing (all were live); the
			// two puts since pruned 100 each.
			if h, z := sizes(); h != expired+2-200 || z != h {
				t.Fatalf("after the puts: hash %d, index %d fields, want %d", h, z, expired+2-200)
			}
			ts, err := p.GetTraits(ctx, "p")
			must(t, err)
			if len(ts) != 2 || ts[0].TraitType != "forever" || ts[1].TraitType != "hour" {
				t.Fatalf("GetTraits = %v, want forever and hour", ts)
			}
			if tr, err := p.GetTrait(ctx, "p", "old-249"); err != nil || tr != nil {
				t.Fatalf("GetTrait(old-249), expired = %v, %v; want nil", tr, err)
			}
			if h, z := sizes(); h != expired+2-200 || z != h {
				t.Fatalf("after the reads: hash %d, index %d fields, want %d: reads never prune", h, z, expired+2-200)
			}
			put("hour", time.Hour) // prunes the last 50
			if h, z := sizes(); h != 2 || z != 2 {
				t.Fatalf("after another put: hash %d, index %d fields, want 2", h, z)
			}
			// A trait is expired from the instant its ExpiresAt is reached.
			clock.add(time.Hour - time.Nanosecond)
			if tr, err := p.GetTrait(ctx, "p", "hour"); err != nil || tr == nil {
				t.Fatalf("GetTrait(hour) 1ns before expiry = %v, %v", tr, err)
			}
			clock.add(time.Nanosecond)
			if tr, err := p.GetTrait(ctx, "p", "hour"); err != nil || tr != nil {
				t.Fatalf("GetTrait(hour) at expiry = %v, %v", tr, err)
			}
			if ts, err := p.GetTraits(ctx, "p"); err != nil || len(ts) != 1 || ts[0].TraitType != "forever" {
				t.Fatalf("GetTraits at expiry = %v, %v", ts, err)
			}
		})
	}
}

// TestTraitsIndexedAgain: a traits hash without its expiry index (written by a
// version that kept none) is read whole, its live traits visible and its expired
// ones not, without writing; the next PutTrait indexes it again and prunes the
// expired ones.
func TestTraitsIndexedAgain(t *testing.T) {
	for name, target := range traitTargets(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, prefix := target(t)
			t.Cleanup(func() { _ = testenv.DeleteRedisPrefix(c, prefix); _ = c.Close() })
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			p, err := New(c, WithKeyPrefix(prefix), WithClock(func() time.Time { return now }))
			must(t, err)
			hash, exp := p.k.traits("p")
			for typ, at := range map[string]int64{"gone": now.Add(-time.Second).UnixMicro(), "live": now.Add(time.Hour).UnixMicro(), "forever": 0} {
				must(t, c.HSet(ctx, hash, typ, strconv.FormatInt(at, 10)+`|{"traitType":"`+typ+`","status":"PASS"}`).Err())
			}
			ts, err := p.GetTraits(ctx, "p")
			must(t, err)
			if len(ts) != 2 || ts[0].TraitType != "forever" || ts[1].TraitType != "live" {
				t.Fatalf("GetTraits = %v, want forever and live", ts)
			}
			if tr, err := p.GetTrait(ctx, "p", "gone"); err != nil || tr != nil {
				t.Fatalf("GetTrait(gone) = %v, %v; want nil", tr, err)
			}
			if h, z := c.HLen(ctx, hash).Val(), c.ZCard(ctx, exp).Val(); h != 3 || z != 0 {
				t.Fatalf("after the reads: hash %d, index %d fields, want 3 and 0: reads never write", h, z)
			}
			must(t, p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "new", Status: types.TraitPass}, 0))
			if h, z := c.HLen(ctx, hash).Val(), c.ZCard(ctx, exp).Val(); h != 3 || z != 3 {
				t.Fatalf("after a put: hash %d, index %d fields, want 3 each (gone pruned, new added)", h, z)
			}
			if s := c.ZScore(ctx, exp, "live").Val(); s != float64(now.Add(time.Hour).UnixMicro()) {
				t.Fatalf("index score of live = %v, want its expiry in µs %d", s, now.Add(time.Hour).UnixMicro())
			}
		})
	}
}

// oldTraitPut is trait_put.lua of the versions before the expiry index (git show
// 14013bd^:provider/redisprovider/lua/trait_put.lua), which a writer not yet upgraded
// still runs on the same prefix: it prunes expired traits and stores one, without
// touching the index.
const oldTraitPut = `local now = tonumber(ARGV[4])
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local v = all[i + 1]
  local e = tonumber(string.sub(v, 1, string.find(v, '|', 1, true) - 1))
  if e > 0 and e < now then redis.call('HDEL', KEYS[1], all[i]) end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. '|' .. ARGV[3])
return 1`

// TestTraitsStaleIndex: traits that an older version wrote (which keeps no index)
// over traits this version indexed leave index entries that disagree with the
// hash while the two keep the same size. The hash is the truth: a trait the older
// version renewed stays live after the expiry the index still holds, and one it
// added (pruning another) is read by GetTraits as by GetTrait.
func TestTraitsStaleIndex(t *testing.T) {
	for name, target := range traitTargets(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, prefix := target(t)
			t.Cleanup(func() { _ = testenv.DeleteRedisPrefix(c, prefix); _ = c.Close() })
			clock := &settableClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			p, err := New(c, WithKeyPrefix(prefix), WithClock(clock.now))
			must(t, err)
			hash, _ := p.k.traits("p")
			// oldPut stores typ as the older version's PutTrait does.
			oldPut := func(typ string, ttl time.Duration) {
				t.Helper()
				now := clock.now()
				var exp int64
				tr := types.TraitEvaluation{PipelineID: "p", TraitType: typ, Status: types.TraitPass, EvaluatedAt: now}
				if ttl > 0 {
					at := now.Add(ttl)
					tr.ExpiresAt, exp = &at, at.UnixMicro()
				}
				data, err := json.Marshal(tr)
				must(t, err)
				must(t, c.Eval(ctx, oldTraitPut, []string{hash}, typ, exp, data, now.UnixMicro()).Err())
			}
			// want reports unless GetTraits lists exactly types and GetTrait
			// agrees on each of them and on absent.
			want := func(what string, absent string, types ...string) {
				t.Helper()
				ts, err := p.GetTraits(ctx, "p")
				must(t, err)
				var got []string
				for _, tr := range ts {
					got = append(got, tr.TraitType)
				}
				if fmt.Sprint(got) != fmt.Sprint(types) {
					t.Errorf("%s: GetTraits = %v, want %v", what, got, types)
				}
				for _, typ := range types {
					if tr, err := p.GetTrait(ctx, "p", typ); err != nil || tr == nil {
						t.Errorf("%s: GetTrait(%s) = %v, %v; want it", what, typ, tr, err)
					}
				}
				if tr, err := p.GetTrait(ctx, "p", absent); err != nil || tr != nil {
					t.Errorf("%s: GetTrait(%s) = %v, %v; want nil", what, absent, tr, err)
				}
			}
			put := func(typ string, ttl time.Duration) {
				t.Helper()
				must(t, p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: typ, Status: types.TraitPass}, ttl))
			}

			// Renewed by the older version: forever, and for longer.
			put("forever", time.Minute)
			put("longer", time.Minute)
			oldPut("forever", 0)
			oldPut("longer", time.Hour)
			clock.add(2 * time.Minute) // past the expiry the index holds
			want("after older renewals", "none", "forever", "longer")
			clock.add(time.Hour)
			want("after the longer renewal's expiry", "longer", "forever")

			// Added by the older version, which pruned an expired trait the
			// index still lists: the hash and index keep one size.
			put("gone", time.Minute)
			clock.add(2 * time.Minute)
			oldPut("added", time.Hour)
			want("after an older put", "gone", "added", "forever")
		})
	}
}

// TestGetTraitsReadPath: GetTraits reads with one HSCAN, in one round trip,
// whenever that reads the whole hash, expired traits, a lost or stale index
// included (the values are filtered in Go, and nothing is written); it runs the
// read-only script (a second round trip) to read a large hash through the index,
// or whole when the index cannot be trusted, and runs it directly next time; and
// a value the index wrongly lists as live is still not returned.
func TestGetTraitsReadPath(t *testing.T) {
	for name, target := range traitTargets(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, prefix := target(t)
			t.Cleanup(func() { _ = testenv.DeleteRedisPrefix(c, prefix); _ = c.Close() })
			counter := testenv.CountRedis(c)
			clock := &settableClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			p, err := New(c, WithKeyPrefix(prefix), WithClock(clock.now))
			must(t, err)
			must(t, p.Start(ctx))
			for typ, ttl := range map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "forever": 0} {
				must(t, p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: typ, Status: types.TraitPass}, ttl))
			}
			hash, exp := p.k.traits("p")
			sizes := func(step string, h, z int64) {
				t.Helper()
				if gh, gz := c.HLen(ctx, hash).Val(), c.ZCard(ctx, exp).Val(); gh != h || gz != z {
					t.Errorf("%s: hash %d, index %d fields, want %d and %d", step, gh, gz, h, z)
				}
			}
			read := func(step string, trips int64, want ...string) {
				t.Helper()
				counter.Reset()
				ts, err := p.GetTraits(ctx, "p")
				must(t, err)
				var got []string
				for _, tr := range ts {
					got = append(got, tr.TraitType)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: GetTraits = %v, want %v", step, got, want)
				}
				if n := counter.Load(); n != trips {
					t.Errorf("%s: %d round trips, want %d", step, n, trips)
				}
			}
			read("all live", 1, "forever", "hour", "minute")
			if p.traitsByScript.has("p") {
				t.Fatal("all live: the next GetTraits runs the script")
			}
			// At minute's ExpiresAt it is expired, and filtered in Go.
			clock.add(time.Minute)
			read("at the expiry", 1, "forever", "hour")
			clock.add(time.Microsecond)
			read("one expired", 1, "forever", "hour")
			sizes("after the reads", 3, 3) // reads never prune
			must(t, c.Del(ctx, exp).Err())
			read("index lost", 1, "forever", "hour")
			sizes("index lost", 3, 0)
			// An older writer stored hour with an expiry already past, leaving
			// the index's entry live.
			past := clock.now().Add(-time.Second)
			data, err := json.Marshal(types.TraitEvaluation{TraitType: "hour", Status: types.TraitPass, ExpiresAt: &past})
			must(t, err)
			must(t, c.HSet(ctx, hash, "hour", strconv.FormatInt(past.UnixMicro(), 10)+"|"+string(data)).Err())
			read("stale index", 1, "forever")
			// A hash larger than one HSCAN reads is read by the script, through
			// the index (the first put indexed the hash again and pruned minute
			// and hour).
			for i := range traitScanCount * 2 {
				must(t, p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: fmt.Sprintf("many-%03d", i), Status: types.TraitPass}, 0))
			}
			sizes("after the puts", 1+2*traitScanCount, 1+2*traitScanCount)
			all := 1 + 2*traitScanCount
			counter.Reset()
			ts, err := p.GetTraits(ctx, "p")
			must(t, err)
			if n := counter.Load(); len(ts) != all || n != 2 {
				t.Errorf("%d traits in a hash of more than %d: read %d in %d round trips, want all in 2", all, traitScanCount, len(ts), n)
			}
			// The script found the hash too large to scan: the next GetTraits
			// runs it directly, in one round trip.
			large := func(step string) {
				t.Helper()
				counter.Reset()
				if ts, err := p.GetTraits(ctx, "p"); err != nil || len(ts) != all || counter.Load() != 1 {
					t.Errorf("%s: %d traits, %v, in %d round trips; want %d in 1", step, len(ts), err, counter.Load(), all)
				}
			}
			large("large hash again")
			// Expired traits the index lists are not read; one the index lists
			// as expired but the hash holds live (an older writer's renewal)
			// makes the script read the hash whole; so does a lost index.
			must(t, p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "short", Status: types.TraitPass}, time.Minute))
			clock.add(time.Minute)
			large("one expired in a large hash")
			sizes("one expired in a large hash", int64(all)+1, int64(all)+1)
			data, err = json.Marshal(types.TraitEvaluation{TraitType: "short", Status: types.TraitPass})
			must(t, err)
			must(t, c.HSet(ctx, hash, "short", "0|"+string(data)).Err())
			counter.Reset()
			if ts, err := p.GetTraits(ctx, "p"); err != nil || len(ts) != all+1 || counter.Load() != 1 {
				t.Errorf("stale index of a large hash: %d traits, %v, in %d round trips; want %d in 1", len(ts), err, counter.Load(), all+1)
			}
			must(t, c.Del(ctx, exp).Err())
			counter.Reset()
			if ts, err := p.GetTraits(ctx, "p"); err != nil || len(ts) != all+1 || counter.Load() != 1 {
				t.Errorf("lost index of a large hash: %d traits, %v, in %d round trips; want %d in 1", len(ts), err, counter.Load(), all+1)
			}
			sizes("lost index of a large hash", int64(all)+1, 0)
		})
	}
}

// TestHintsBounded: the GetTraits hints keep at most maxHints IDs, and an ID
// removed frees its place.
func TestHintsBounded(t *testing.T) {
	var h hints
	for i := range maxHints + 10 {
		h.add(strconv.Itoa(i))
		h.add(strconv.Itoa(i)) // again: counted once
	}
	if n := h.n.Load(); n != maxHints || !h.has("0") || h.has(strconv.Itoa(maxHints)) {
		t.Fatalf("after %d adds: %d kept, has 0 %v, has %d %v; want the first %d", maxHints+10, n, h.has("0"), maxHints, h.has(strconv.Itoa(maxHints)), maxHints)
	}
	h.remove("0")
	h.remove("0")
	h.add("new")
	if n := h.n.Load(); n != maxHints || h.has("0") || !h.has("new") {
		t.Fatalf("after a remove and an add: %d kept, has 0 %v, has new %v", n, h.has("0"), h.has("new"))
	}
}
