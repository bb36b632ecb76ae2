package redisstate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/types"
)

// extendingMerge is an unfenced merge of k that extends its value's life: to
// ttl (0: for ever).
type extendingMerge struct {
	name string
	ttl  time.Duration
	do   func(ctx context.Context, k state.Key, ttl time.Duration) error
}

// extendingMerges are every unfenced merge of s that may extend a value's life.
func extendingMerges[V any](s state.OnceStore[V], delta V) []extendingMerge {
	out := []extendingMerge{}
	for _, ttl := range []time.Duration{0, 4 * time.Hour} {
		out = append(out,
			extendingMerge{"MergeUpdate", ttl, func(ctx context.Context, k state.Key, ttl time.Duration) error {
				return s.MergeUpdate(ctx, k, delta, ttl)
			}},
			extendingMerge{"MergeUpdateOnce", ttl, func(ctx context.Context, k state.Key, ttl time.Duration) error {
				_, err := s.MergeUpdateOnce(ctx, "event-"+ttl.String(), k, delta, ttl)
				return err
			}})
		if b, ok := s.(state.BatchStore[V]); ok {
			out = append(out, extendingMerge{"MergeMany", ttl, func(ctx context.Context, k state.Key, ttl time.Duration) error {
				return b.MergeMany(ctx, []state.Update[V]{{Key: k, Delta: delta, TTL: ttl}})
			}})
		}
	}
	return out
}

// TestFenceMemoryOutlivesUnfencedMerge is issue 35's breach 1 on the stores,
// on miniredis with time: a merge fenced by fence 2 with a 1 h ttl, an unfenced
// merge of the same key that extends its ttl (4 h) or clears it (0), by every
// unfenced merge, then fence 1 two hours later: the value is live, so fence 1
// is refused. Before the fix the memory kept the fenced merge's hour and fence
// 1 was accepted.
func TestFenceMemoryOutlivesUnfencedMerge(t *testing.T) {
	lease := func(f int64) types.Lease { return types.Lease{Key: "job", Token: "t", Fence: f} }
	type store struct {
		name string
		// open returns the unfenced merges and a fenced merge of fence f.
		open func(t *testing.T, c goredis.UniversalClient, prefix string) ([]extendingMerge, func(ctx context.Context, f int64, k state.Key) error)
	}
	stores := []store{
		{"Int64SumStore", func(t *testing.T, c goredis.UniversalClient, prefix string) ([]extendingMerge, func(context.Context, int64, state.Key) error) {
			s, err := redisstate.NewInt64SumStore(c, prefix)
			must(t, err)
			return extendingMerges[int64](s, 1), func(ctx context.Context, f int64, k state.Key) error {
				v, err := state.Fenced[int64](s, lease(f))
				must(t, err)
				return v.MergeUpdate(ctx, k, 1, time.Hour)
			}
		}},
		{"Float64SumStore", func(t *testing.T, c goredis.UniversalClient, prefix string) ([]extendingMerge, func(context.Context, int64, state.Key) error) {
			s, err := redisstate.NewFloat64SumStore(c, prefix)
			must(t, err)
			return extendingMerges[float64](s, 1), func(ctx context.Context, f int64, k state.Key) error {
				v, err := state.Fenced[float64](s, lease(f))
				must(t, err)
				return v.MergeUpdate(ctx, k, 1, time.Hour)
			}
		}},
		{"Int64MaxStore", func(t *testing.T, c goredis.UniversalClient, prefix string) ([]extendingMerge, func(context.Context, int64, state.Key) error) {
			s, err := redisstate.NewInt64MaxStore(c, prefix)
			must(t, err)
			return extendingMerges[int64](s, 1), func(ctx context.Context, f int64, k state.Key) error {
				v, err := state.Fenced[int64](s, lease(f))
				must(t, err)
				return v.MergeUpdate(ctx, k, f, time.Hour)
			}
		}},
		{"BytesStore", func(t *testing.T, c goredis.UniversalClient, prefix string) ([]extendingMerge, func(context.Context, int64, state.Key) error) {
			s, err := redisstate.NewBytesStore(c, prefix, concat{})
			must(t, err)
			return extendingMerges[[]byte](s, []byte("u")), func(ctx context.Context, f int64, k state.Key) error {
				v, err := state.Fenced[[]byte](s, lease(f))
				must(t, err)
				return v.MergeUpdate(ctx, k, []byte("f"), time.Hour)
			}
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			probe, _ := st.open(t, miniBackend.client(t), prefixFor(t))
			for i := range probe {
				name := probe[i].name + "/ttl_" + probe[i].ttl.String()
				t.Run(name, func(t *testing.T) {
					ctx := t.Context()
					merges, fenced := st.open(t, miniBackend.client(t), prefixFor(t))
					m, k := merges[i], state.Key{Entity: "e", Bucket: 1}
					must(t, fenced(ctx, 2, k))
					must(t, m.do(ctx, k, m.ttl))
					miniBackend.sleep(t, 2*time.Hour)
					if err := fenced(ctx, 1, k); !errors.Is(err, state.ErrFenced) {
						t.Errorf("fence 1, 2 h after fence 2 merged a value an unfenced %s kept for %v: %v, want ErrFenced",
							m.name, m.ttl, err)
					}
				})
			}
		})
	}
}
