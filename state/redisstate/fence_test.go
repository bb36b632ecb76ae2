package redisstate_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storekey"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/types"
)

// fencedStore is one store of the fence tests, as a state.Store of int64 deltas
// (bytes are the delta's decimal digits, concatenated).
type fencedStore struct {
	name string
	open func(t *testing.T, c goredis.UniversalClient, prefix string) fenceOps
}

// fenceOps are the merges of one store, through s (the store or a fenced view).
type fenceOps struct {
	merge func(ctx context.Context, s any, k state.Key, d int64) error
	once  func(ctx context.Context, s any, event string, k state.Key, d int64) (bool, error)
	many  func(ctx context.Context, s any, ups []state.Update[int64]) error // nil: no MergeMany
	get   func(ctx context.Context, k state.Key) (string, error)
	store any
	view  func(t *testing.T, key string, fence int64) any
}

func numericOps[V int64 | float64](t *testing.T, s state.OnceStore[V], conv func(int64) V) fenceOps {
	return fenceOps{
		merge: func(ctx context.Context, st any, k state.Key, d int64) error {
			return st.(state.Store[V]).MergeUpdate(ctx, k, conv(d), time.Hour)
		},
		once: func(ctx context.Context, st any, event string, k state.Key, d int64) (bool, error) {
			return st.(state.OnceStore[V]).MergeUpdateOnce(ctx, event, k, conv(d), time.Hour)
		},
		many: func(ctx context.Context, st any, ups []state.Update[int64]) error {
			vs := make([]state.Update[V], len(ups))
			for i, u := range ups {
				vs[i] = state.Update[V]{Key: u.Key, Delta: conv(u.Delta), TTL: u.TTL}
			}
			return st.(state.BatchStore[V]).MergeMany(ctx, vs)
		},
		get: func(ctx context.Context, k state.Key) (string, error) {
			v, _, err := s.Get(ctx, k)
			return strconv.FormatFloat(float64(v), 'g', -1, 64), err
		},
		store: s,
		view: func(t *testing.T, key string, fence int64) any {
			v, err := state.Fenced[V](s, types.Lease{Key: key, Token: "t", Fence: fence})
			if err != nil {
				t.Fatal(err)
			}
			return v
		},
	}
}

func fencedStores() []fencedStore {
	id := func(d int64) int64 { return d }
	return []fencedStore{
		{"Int64SumStore", func(t *testing.T, c goredis.UniversalClient, prefix string) fenceOps {
			s, err := redisstate.NewInt64SumStore(c, prefix)
			must(t, err)
			return numericOps[int64](t, s, id)
		}},
		{"Float64SumStore", func(t *testing.T, c goredis.UniversalClient, prefix string) fenceOps {
			s, err := redisstate.NewFloat64SumStore(c, prefix)
			must(t, err)
			return numericOps[float64](t, s, func(d int64) float64 { return float64(d) })
		}},
		{"Int64MaxStore", func(t *testing.T, c goredis.UniversalClient, prefix string) fenceOps {
			s, err := redisstate.NewInt64MaxStore(c, prefix)
			must(t, err)
			return numericOps[int64](t, s, id)
		}},
		{"BytesStore", func(t *testing.T, c goredis.UniversalClient, prefix string) fenceOps {
			s, err := redisstate.NewBytesStore(c, prefix, concat{})
			must(t, err)
			b := func(d int64) []byte { return []byte(strconv.FormatInt(d, 10)) }
			return fenceOps{
				merge: func(ctx context.Context, st any, k state.Key, d int64) error {
					return st.(state.Store[[]byte]).MergeUpdate(ctx, k, b(d), time.Hour)
				},
				once: func(ctx context.Context, st any, event string, k state.Key, d int64) (bool, error) {
					return st.(state.OnceStore[[]byte]).MergeUpdateOnce(ctx, event, k, b(d), time.Hour)
				},
				get: func(ctx context.Context, k state.Key) (string, error) {
					v, _, err := s.Get(ctx, k)
					return string(v), err
				},
				store: s,
				view: func(t *testing.T, key string, fence int64) any {
					v, err := state.Fenced[[]byte](s, types.Lease{Key: key, Token: "t", Fence: fence})
					if err != nil {
						t.Fatal(err)
					}
					return v
				},
			}
		}},
	}
}

// TestFencedMerges checks the rule of package fence on every merge of every
// store, on miniredis, a real server and a cluster (no CROSSSLOT: the fence
// memory shares the value's slot): a newer fence's merge makes an older one's
// fail with nothing written, equal fences pass, another lease key neither
// passes nor blocks, an unfenced merge neither checks nor resets the memory, a
// repeated event is a duplicate before it is a refusal, and in MergeMany a
// refused update is that update's error.
func TestFencedMerges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, fs := range fencedStores() {
			t.Run(fs.name, func(t *testing.T) {
				ctx := t.Context()
				o := fs.open(t, b.client(t), prefixFor(t))
				k := state.Key{Entity: "e{1}", Bucket: 7}
				read := func() string {
					t.Helper()
					v, err := o.get(ctx, k)
					must(t, err)
					return v
				}
				must(t, o.merge(ctx, o.view(t, "job", 2), k, 1))
				if ok, err := o.once(ctx, o.view(t, "job", 2), "ev", k, 2); !ok || err != nil {
					t.Fatalf("fenced MergeUpdateOnce = %v, %v", ok, err)
				}
				want := read()
				if err := o.merge(ctx, o.view(t, "job", 1), k, 3); !errors.Is(err, state.ErrFenced) {
					t.Fatalf("merge of an older fence = %v, want ErrFenced", err)
				}
				if ok, err := o.once(ctx, o.view(t, "job", 1), "ev", k, 3); ok || err != nil {
					t.Fatalf("a repeated event of an older fence = %v, %v; want a duplicate (false, nil)", ok, err)
				}
				if ok, err := o.once(ctx, o.view(t, "job", 1), "ev2", k, 3); ok || !errors.Is(err, state.ErrFenced) {
					t.Fatalf("a new event of an older fence = %v, %v; want ErrFenced", ok, err)
				}
				if got := read(); got != want {
					t.Fatalf("refused merges wrote: %s, want %s", got, want)
				}
				must(t, o.merge(ctx, o.view(t, "other", 1), k, 4)) // another lease key
				must(t, o.merge(ctx, o.store, k, 5))               // unfenced
				want = read()
				if err := o.merge(ctx, o.view(t, "job", 1), k, 6); !errors.Is(err, state.ErrFenced) {
					t.Fatalf("after an unfenced merge, an older fence's = %v, want ErrFenced", err)
				}
				if got := read(); got != want {
					t.Fatalf("refused merge wrote: %s, want %s", got, want)
				}
				must(t, o.merge(ctx, o.view(t, "job", 2), k, 7)) // equal
				if o.many == nil {
					return
				}
				other := state.Key{Entity: "e2", Bucket: 7}
				must(t, o.merge(ctx, o.view(t, "job", 3), other, 1))
				fresh := state.Key{Entity: "e3", Bucket: 7}
				want = read()
				err := o.many(ctx, o.view(t, "job", 2), []state.Update[int64]{
					{Key: k, Delta: 10, TTL: time.Hour}, {Key: other, Delta: 10, TTL: time.Hour}, {Key: fresh, Delta: 10, TTL: time.Hour}})
				var me *state.MergeError
				if !errors.As(err, &me) {
					t.Fatalf("MergeMany = %v, want a *state.MergeError", err)
				}
				if me.Errs[0] != nil || !errors.Is(me.Errs[1], state.ErrFenced) || me.Errs[2] != nil {
					t.Fatalf("MergeMany errors = %v, want only the second refused", me.Errs)
				}
				if got := read(); got == want {
					t.Fatalf("MergeMany did not merge the first update")
				}
			})
		}
	})
}

// TestFenceMemoryTTL checks the fence memory's lifetime rule: a fenced merge
// gives the memory of its entity's values the value's TTL plus a slack
// (redisx.FenceMemoryMillis) when the value's is longer than the memory's,
// never a shorter one, and none (PERSIST) for a value that never expires; an
// unfenced merge does the same to an existing memory (and creates none), and
// one inside the slack leaves it alone (before the slack, every merge of a
// sliding TTL ran a PEXPIRE); a refused merge leaves it as it is.
func TestFenceMemoryTTL(t *testing.T) {
	ctx := t.Context()
	c := miniBackend.client(t)
	p := prefixFor(t)
	s, err := redisstate.NewInt64SumStore(c, p)
	must(t, err)
	view := func(f int64) state.Store[int64] {
		v, err := state.Fenced[int64](s, types.Lease{Key: "job", Token: "t", Fence: f})
		must(t, err)
		return v
	}
	mem := p + ":{e}:" + storekey.Int64Sum + ":fences"
	k1, k2 := state.Key{Entity: "e", Bucket: 1}, state.Key{Entity: "e", Bucket: 2}
	ttl := func(key string) time.Duration {
		t.Helper()
		d, err := c.PTTL(ctx, key).Result()
		must(t, err)
		return d
	}
	must(t, s.MergeUpdate(ctx, k1, 1, time.Hour)) // unfenced: no memory
	if got := ttl(mem); got != -2 {
		t.Fatalf("an unfenced merge made a fence memory (PTTL %v)", got)
	}
	kept := func(key string) time.Duration { // the memory's TTL for the value at key
		t.Helper()
		return time.Duration(redisx.FenceMemoryMillis(ttl(key).Milliseconds())) * time.Millisecond
	}
	must(t, view(2).MergeUpdate(ctx, k1, 1, time.Hour))
	if got, want := ttl(mem), kept(p+":{e}:isum:1"); got != want {
		t.Fatalf("memory PTTL %v, want the value's and its slack %v", got, want)
	}
	must(t, view(2).MergeUpdate(ctx, k2, 1, 3*time.Hour)) // a longer-lived value lengthens it
	long := kept(p + ":{e}:isum:2")
	if got := ttl(mem); got != long {
		t.Fatalf("memory PTTL %v, want the longer value's and its slack %v", got, long)
	}
	must(t, view(2).MergeUpdate(ctx, k1, 1, time.Hour)) // a shorter-lived one does not shorten it
	if err := view(1).MergeUpdate(ctx, k1, 1, 0); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("older fence = %v, want ErrFenced", err)
	}
	must(t, s.MergeUpdate(ctx, k1, 1, 4*time.Hour)) // unfenced, it lengthens it as well
	want := kept(p + ":{e}:isum:1")
	if got := ttl(mem); got != want {
		t.Fatalf("memory PTTL %v, want the unfenced merge's value's and its slack %v", got, want)
	}
	miniFor(t).FastForward(time.Minute)
	must(t, s.MergeUpdate(ctx, k1, 1, 4*time.Hour)) // inside the slack: no PEXPIRE
	if got := ttl(mem); got != want-time.Minute || got < ttl(p+":{e}:isum:1") {
		t.Fatalf("memory PTTL %v after an unfenced merge inside the slack, want it left at %v (and above the value's)", got, want-time.Minute)
	}
	must(t, s.MergeUpdate(ctx, k1, 1, 0)) // unfenced, never expires
	if got := ttl(mem); got != -1 {
		t.Fatalf("memory PTTL %v after an unfenced merge made its value permanent, want none (-1)", got)
	}
	must(t, view(2).MergeUpdate(ctx, k1, 1, 0)) // a value that never expires
	if got := ttl(mem); got != -1 {
		t.Fatalf("memory PTTL %v, want none (-1)", got)
	}
	must(t, view(2).MergeUpdate(ctx, k2, 1, time.Hour))
	if got := ttl(mem); got != -1 {
		t.Fatalf("memory PTTL %v, want still none (-1)", got)
	}
}
