package redisstate_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// outcomeCase is one store kind of TestMergeManyOutcomes: its constructor, its key
// segment, a value at its upper bound, and deltas.
type outcomeCase[V comparable] struct {
	name  string
	open  func(c goredis.UniversalClient, prefix string) (state.BatchStore[V], error)
	kind  string
	top   V // stored at "hi": one more delta leaves a sum's range
	small func(i int) V
}

// TestMergeManyOutcomes: a batch mixing plain updates, updates of one key again,
// an update refused for its range (overflow), one meeting a value of another Redis
// type (WRONGTYPE) and one meeting a string that is no number leaves every key as
// the same MergeUpdates in order leave it, and MergeError.Errs[i] is what the i-th
// MergeUpdate returned (nil, ErrInvalidArgument, another error): exactly the failed
// updates fail, the others apply once.
func TestMergeManyOutcomes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		runOutcome(t, b, outcomeCase[int64]{"Int64SumStore", func(c goredis.UniversalClient, p string) (state.BatchStore[int64], error) {
			return redisstate.NewInt64SumStore(c, p)
		}, "isum", math.MaxInt64, func(i int) int64 { return int64(i + 1) }})
		runOutcome(t, b, outcomeCase[float64]{"Float64SumStore", func(c goredis.UniversalClient, p string) (state.BatchStore[float64], error) {
			return redisstate.NewFloat64SumStore(c, p)
		}, "fsum", state.MaxFloat64, func(i int) float64 { return float64(i+1) / 4 }})
		runOutcome(t, b, outcomeCase[int64]{"Int64MaxStore", func(c goredis.UniversalClient, p string) (state.BatchStore[int64], error) {
			return redisstate.NewInt64MaxStore(c, p)
		}, "imax", math.MaxInt64, func(i int) int64 { return int64(i*7%5 + 1) }})
	})
}

func runOutcome[V comparable](t *testing.T, b backend, oc outcomeCase[V]) {
	t.Run(oc.name, func(t *testing.T) {
		ctx := t.Context()
		c := b.client(t)
		base := prefixFor(t)
		batchP, oneP := base+":batch", base+":one"
		valueKey := func(p string, k state.Key) string {
			return fmt.Sprintf("%s:{%s}:%s:%d", p, k.Entity, oc.kind, k.Bucket)
		}
		a1, a2 := state.Key{Entity: "a", Bucket: 1}, state.Key{Entity: "a", Bucket: 2}
		bk := state.Key{Entity: "b"}
		hi, wrong, text := state.Key{Entity: "hi"}, state.Key{Entity: "wrong", Bucket: 3}, state.Key{Entity: "a", Bucket: 9}
		stores := map[string]state.BatchStore[V]{}
		for _, p := range []string{batchP, oneP} {
			s, err := oc.open(c, p)
			must(t, err)
			stores[p] = s
			must(t, s.MergeUpdate(ctx, hi, oc.top, 0))
			must(t, c.HSet(ctx, valueKey(p, wrong), "f", "v").Err())
			must(t, c.Set(ctx, valueKey(p, text), "not a number", 0).Err())
		}
		var ups []state.Update[V]
		for i, k := range []state.Key{a1, hi, wrong, a1, bk, text, a2, hi, a1, wrong, bk} {
			d := oc.small(i)
			if k == hi && i == 1 {
				d = oc.top
			}
			ups = append(ups, state.Update[V]{Key: k, Delta: d})
		}
		var want []error
		for _, u := range ups {
			want = append(want, stores[oneP].MergeUpdate(ctx, u.Key, u.Delta, u.TTL))
		}
		err := stores[batchP].MergeMany(ctx, ups)
		var me *state.MergeError
		if !errors.As(err, &me) || len(me.Errs) != len(ups) {
			t.Fatalf("MergeMany = %v, want a *state.MergeError of %d entries (MergeUpdates: %v)", err, len(ups), want)
		}
		for i, w := range want {
			got := me.Errs[i]
			if (got == nil) != (w == nil) || errors.Is(got, state.ErrInvalidArgument) != errors.Is(w, state.ErrInvalidArgument) {
				t.Errorf("update %d (%v): MergeMany's error %v, MergeUpdate's %v", i, ups[i].Key, got, w)
			}
		}
		for _, k := range []state.Key{a1, a2, bk, hi} {
			g1, f1, err1 := stores[batchP].Get(ctx, k)
			g2, f2, err2 := stores[oneP].Get(ctx, k)
			if g1 != g2 || f1 != f2 || err1 != nil || err2 != nil {
				t.Errorf("key %v: after MergeMany %v (%v, %v), after MergeUpdates %v (%v, %v)", k, g1, f1, err1, g2, f2, err2)
			}
		}
		if typ, err := c.Type(ctx, valueKey(batchP, wrong)).Result(); err != nil || typ != "hash" {
			t.Errorf("the hash at %v is now a %s (%v)", wrong, typ, err)
		}
		if v, err := c.Get(ctx, valueKey(batchP, text)).Result(); err != nil || v != "not a number" {
			t.Errorf("the string at %v is now %q (%v)", text, v, err)
		}
	})
}
