package redisstate_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/types"
)

func TestMaxIsExactOverInt64(t *testing.T) {
	// Lua numbers are doubles: a script comparing them would call 2^60 and 2^60+1
	// equal. The store compares decimal strings.
	cases := []struct {
		name   string
		deltas []int64
		want   int64
	}{
		{"near 2^60", []int64{1<<60 + 1, 1 << 60, 1<<60 - 1}, 1<<60 + 1},
		{"max last", []int64{math.MaxInt64 - 1, math.MaxInt64}, math.MaxInt64},
		{"negatives", []int64{-1 << 60, -1<<60 - 1, -1<<60 + 1}, -1<<60 + 1},
		{"min", []int64{math.MinInt64, math.MinInt64 + 1}, math.MinInt64 + 1},
		{"only min", []int64{math.MinInt64}, math.MinInt64},
		{"signs", []int64{-10, 9, -100, 0}, 9},
		{"lengths", []int64{99, 100, -1000, 101}, 101},
	}
	forEachBackend(t, func(t *testing.T, b backend) {
		s, err := redisstate.NewInt64MaxStore(b.client(t), prefixFor(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				k := state.Key{Entity: tc.name}
				for _, d := range tc.deltas {
					if err := s.MergeUpdate(t.Context(), k, d, 0); err != nil {
						t.Fatal(err)
					}
				}
				if got, found, err := s.Get(t.Context(), k); err != nil || !found || got != tc.want {
					t.Fatalf("Get = %d, %v, %v; want %d", got, found, err, tc.want)
				}
			})
		}
	})
}

func TestOverflowWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, err := redisstate.NewInt64SumStore(b.client(t), prefixFor(t))
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		k := state.Key{Entity: "big"}
		if err := s.MergeUpdate(ctx, k, math.MaxInt64, 0); err != nil {
			t.Fatal(err)
		}
		if err := s.MergeUpdate(ctx, k, 1, time.Hour); err == nil {
			t.Fatal("overflowing MergeUpdate succeeded")
		}
		// The failed once-merge must not claim its event.
		if _, err := s.MergeUpdateOnce(ctx, "ev", k, 1, 0); err == nil {
			t.Fatal("overflowing MergeUpdateOnce succeeded")
		}
		if ok, err := s.MergeUpdateOnce(ctx, "ev", k, -7, 0); err != nil || !ok {
			t.Fatalf("MergeUpdateOnce after a failed one = %v, %v; want applied", ok, err)
		}
		if got, _, err := s.Get(ctx, k); err != nil || got != math.MaxInt64-7 {
			t.Fatalf("Get = %d, %v; want MaxInt64-7", got, err)
		}
	})
}

func TestDedupTTL(t *testing.T) {
	b := miniBackend
	s, err := redisstate.NewInt64SumStore(b.client(t), prefixFor(t), redisstate.WithDedupTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, k := t.Context(), state.Key{Entity: "e"}
	for i, want := range []bool{true, false} {
		if ok, err := s.MergeUpdateOnce(ctx, "ev", k, 1, 0); err != nil || ok != want {
			t.Fatalf("delivery %d: applied = %v, %v; want %v", i, ok, err, want)
		}
	}
	b.sleep(t, time.Minute)
	if ok, err := s.MergeUpdateOnce(ctx, "ev", k, 1, 0); err != nil || !ok {
		t.Fatalf("after the dedup ttl: applied = %v, %v; want true", ok, err)
	}
	if got, _, _ := s.Get(ctx, k); got != 2 {
		t.Fatalf("Get = %d, want 2", got)
	}
}

func TestBytesMaxRetries(t *testing.T) {
	// A monoid whose Combine writes the key behind the store's back loses every race.
	b := miniBackend
	c := b.client(t)
	prefix := prefixFor(t)
	k := state.Key{Entity: "contended"}
	m := &meddler{t: t}
	s, err := redisstate.NewBytesStore(c, prefix, m, redisstate.WithMaxRetries(2), redisstate.WithBackoff(time.Microsecond, time.Microsecond))
	if err != nil {
		t.Fatal(err)
	}
	other, err := redisstate.NewBytesStore(c, prefix, concat{})
	if err != nil {
		t.Fatal(err)
	}
	m.other, m.key = other, k
	err = s.MergeUpdate(t.Context(), k, []byte("x"), 0)
	if !errors.Is(err, state.ErrContention) {
		t.Fatalf("err = %v, want ErrContention", err)
	}
	if m.calls != 3 {
		t.Errorf("combined %d times, want 3 (1 attempt + 2 retries)", m.calls)
	}
	if got, _, _ := other.Get(t.Context(), k); strings.Contains(string(got), "x") {
		t.Errorf("value %q holds the failed delta", got)
	}
}

// meddler is concat, but every Combine first merges "m" into key through other, so
// the caller's compare-and-swap always fails.
type meddler struct {
	concat
	t     *testing.T
	other *redisstate.BytesStore
	key   state.Key
	calls int
}

func (m *meddler) Combine(a, b []byte) []byte {
	if m.other != nil {
		m.calls++
		if err := m.other.MergeUpdate(context.Background(), m.key, []byte("m"), 0); err != nil {
			m.t.Error(err)
		}
	}
	return m.concat.Combine(a, b)
}

func TestOptions(t *testing.T) {
	c := miniBackend.client(t)
	storetest.Invalid(t, map[string]func() error{
		"empty prefix":       func() error { _, err := redisstate.NewInt64SumStore(c, ""); return err },
		"brace prefix":       func() error { _, err := redisstate.NewInt64SumStore(c, "a{b}"); return err },
		"nil option":         func() error { _, err := redisstate.NewInt64SumStore(c, "p", nil); return err },
		"nil bytes option":   func() error { _, err := redisstate.NewBytesStore(c, "p", concat{}, nil); return err },
		"nil deduper option": func() error { _, err := redisstate.NewDeduper(c, "p", nil); return err },
		"typed nil monoid":   func() error { _, err := redisstate.NewBytesStore(c, "p", (*concat)(nil)); return err },
		"long prefix":        func() error { _, err := redisstate.NewDeduper(c, strings.Repeat("p", 65)); return err },
		"dedup ttl over MaxTTL on bytes": func() error {
			_, err := redisstate.NewBytesStore(c, "p", concat{}, redisstate.WithDedupTTL(state.MaxTTL+1))
			return err
		},
		"nil client":                  func() error { _, err := redisstate.NewInt64MaxStore(nil, "p"); return err },
		"typed nil client":            func() error { _, err := redisstate.NewDeduper((*goredis.Client)(nil), "p"); return err },
		"typed nil cluster client":    func() error { _, err := redisstate.NewInt64SumStore((*goredis.ClusterClient)(nil), "p"); return err },
		"control character in prefix": func() error { _, err := redisstate.NewInt64SumStore(c, "a\nb"); return err },
		"ttl over MaxTTL": func() error {
			_, err := redisstate.NewDeduper(c, "p", redisstate.WithDedupTTL(state.MaxTTL+1))
			return err
		},
		"nil monoid": func() error { _, err := redisstate.NewBytesStore(c, "p", nil); return err },
		"negative retries": func() error {
			_, err := redisstate.NewBytesStore(c, "p", concat{}, redisstate.WithMaxRetries(-1))
			return err
		},
		"bad backoff": func() error {
			_, err := redisstate.NewBytesStore(c, "p", concat{}, redisstate.WithBackoff(time.Second, time.Millisecond))
			return err
		},
		"negative ttl": func() error {
			_, err := redisstate.NewDeduper(c, "p", redisstate.WithDedupTTL(-time.Second))
			return err
		},
		"negative dedup ttl": func() error { _, err := redisstate.NewInt64SumStore(c, "p", redisstate.WithDedupTTL(-1)); return err },
		"nil meter provider": func() error {
			_, err := redisstate.NewBytesStore(c, "p", concat{}, redisstate.WithMeterProvider(nil))
			return err
		},
		"typed nil meter provider": func() error {
			_, err := redisstate.NewDeduper(c, "p", redisstate.WithMeterProvider((*sdkmetric.MeterProvider)(nil)))
			return err
		},
		"nil logger": func() error { _, err := redisstate.NewInt64MaxStore(c, "p", redisstate.WithLogger(nil)); return err },
	})
}

// TestOptionKinds checks which constructor takes which option, as the compiler
// does: redisstate.NewInt64SumStore(c, p, redisstate.WithMaxRetries(3)) does not compile;
// WithDedupTTL is taken by every constructor.
func TestOptionKinds(t *testing.T) {
	stores := []string{"NewInt64SumStore", "NewFloat64SumStore", "NewInt64MaxStore", "NewBytesStore"}
	storetest.OptionKinds(t,
		map[string]any{
			"NewInt64SumStore": redisstate.NewInt64SumStore, "NewFloat64SumStore": redisstate.NewFloat64SumStore,
			"NewInt64MaxStore": redisstate.NewInt64MaxStore, "NewBytesStore": redisstate.NewBytesStore, "NewDeduper": redisstate.NewDeduper,
		},
		map[string]any{
			"WithDedupTTL": redisstate.WithDedupTTL, "WithMaxRetries": redisstate.WithMaxRetries, "WithBackoff": redisstate.WithBackoff,
			"WithMeterProvider": redisstate.WithMeterProvider, "WithLogger": redisstate.WithLogger,
		},
		map[string][]string{
			"WithDedupTTL": append(stores, "NewDeduper"), "WithMaxRetries": {"NewBytesStore"}, "WithBackoff": {"NewBytesStore"},
			"WithMeterProvider": append(stores, "NewDeduper"), "WithLogger": append(stores, "NewDeduper"),
		})
}

// TestCorruptValues: a value key written by hand — a non-integer where a sum
// keeps an integer, a string where BytesStore keeps a hash — makes Get and
// GetMany fail with an error wrapping state.ErrCorrupt that names the key.
func TestCorruptValues(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		c := b.client(t)
		prefix := prefixFor(t)
		for _, tc := range []struct {
			name  string
			get   func(k state.Key) []error // Get's, GetMany's
			merge func(k state.Key) error
			raw   func(key string) error
		}{
			{"int64_sum_not_an_integer", func(k state.Key) []error {
				s, _ := redisstate.NewInt64SumStore(c, prefix+":sum")
				_, _, err1 := s.Get(ctx, k)
				_, _, err2 := s.GetMany(ctx, []state.Key{{Entity: "other"}, k})
				return []error{err1, err2}
			}, func(k state.Key) error {
				s, _ := redisstate.NewInt64SumStore(c, prefix+":sum")
				return s.MergeUpdate(ctx, k, 1, 0)
			}, func(key string) error { return c.Set(ctx, key, "12abc", 0).Err() }},
			{"bytes_wrong_type", func(k state.Key) []error {
				s, _ := redisstate.NewBytesStore(c, prefix+":bytes", concat{})
				_, _, err1 := s.Get(ctx, k)
				_, _, err2 := s.GetMany(ctx, []state.Key{k, {Entity: "other"}})
				return []error{err1, err2}
			}, func(k state.Key) error {
				s, _ := redisstate.NewBytesStore(c, prefix+":bytes", concat{})
				return s.MergeUpdate(ctx, k, []byte("x"), 0)
			}, func(key string) error {
				if err := c.Del(ctx, key).Err(); err != nil {
					return err
				}
				return c.Set(ctx, key, "written by hand", 0).Err()
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				k := state.Key{Entity: tc.name}
				if err := tc.merge(k); err != nil {
					t.Fatal(err)
				}
				key := onlyKey(t, c, prefix, tc.name)
				if err := tc.raw(key); err != nil {
					t.Fatal(err)
				}
				for i, err := range tc.get(k) {
					if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), key) {
						t.Errorf("%s of a corrupt value: %v, want an error wrapping state.ErrCorrupt naming %q",
							[]string{"Get", "GetMany"}[i], err, key)
					}
				}
			})
		}
	})
}

// onlyKey returns the one key under prefix whose name holds entity.
func onlyKey(t *testing.T, c goredis.UniversalClient, prefix, entity string) string {
	t.Helper()
	var keys []string
	scan := func(ctx context.Context, c *goredis.Client) error {
		ks, err := c.Keys(ctx, prefix+"*"+entity+"*").Result()
		keys = append(keys, ks...)
		return err
	}
	var err error
	if cc, ok := c.(*goredis.ClusterClient); ok {
		var mu sync.Mutex
		err = cc.ForEachMaster(t.Context(), func(ctx context.Context, c *goredis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, c)
		})
	} else {
		err = scan(t.Context(), c.(*goredis.Client))
	}
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys of %s: %v, %v; want one", entity, keys, err)
	}
	return keys[0]
}

// TestMaxMergeIntoCorruptValue: a merge into an Int64MaxStore value that is no
// integer (written by hand) fails and changes nothing, neither the value nor
// its expiry, fenced or not, by MergeUpdate, MergeUpdateOnce and MergeMany
// (package state, "Corrupt values"). Found by the state simulation (seed
// 1795871025696280344 of testdata/sim-max.seeds); before the fix the script
// compared "12abc" as digits: a lower delta left it and set its ttl, a longer
// one overwrote it.
func TestMaxMergeIntoCorruptValue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		c := b.client(t)
		s, err := redisstate.NewInt64MaxStore(c, prefixFor(t))
		if err != nil {
			t.Fatal(err)
		}
		fs, err := state.Fenced[int64](s, types.Lease{Key: "job", Token: "t", Fence: 1})
		if err != nil {
			t.Fatal(err)
		}
		k := state.Key{Entity: "corruptmax"}
		if err := s.MergeUpdate(ctx, k, 1, 0); err != nil {
			t.Fatal(err)
		}
		key := onlyKey(t, c, prefixFor(t), k.Entity)
		if err := c.Set(ctx, key, "12abc", 0).Err(); err != nil {
			t.Fatal(err)
		}
		for _, delta := range []int64{-5, 5, 123456} {
			for name, merge := range map[string]func() error{
				"MergeUpdate":        func() error { return s.MergeUpdate(ctx, k, delta, time.Hour) },
				"fenced MergeUpdate": func() error { return fs.MergeUpdate(ctx, k, delta, time.Hour) },
				"MergeUpdateOnce": func() error {
					_, err := s.MergeUpdateOnce(ctx, fmt.Sprint("e", delta), k, delta, time.Hour)
					return err
				},
				"MergeMany": func() error {
					return s.MergeMany(ctx, []state.Update[int64]{{Key: k, Delta: delta, TTL: time.Hour}})
				},
			} {
				if err := merge(); err == nil {
					t.Errorf("%s of %d into a corrupt value succeeded", name, delta)
				}
				if v, err := c.Get(ctx, key).Result(); err != nil || v != "12abc" {
					t.Errorf("after %s of %d: the value is %q, %v; want \"12abc\"", name, delta, v, err)
				}
				if ttl, err := c.PTTL(ctx, key).Result(); err != nil || ttl != -1 {
					t.Errorf("after %s of %d: the value's PTTL is %v, %v; want none", name, delta, ttl, err)
				}
			}
		}
	})
}
