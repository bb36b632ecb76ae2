package redisstate_test

import (
	"errors"
	"fmt"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/rediswalk"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// TestCorruptEveryField writes, with each store, a value by an unfenced merge,
// a fenced merge (so its fence memory exists) and a once-merge (its claim), and
// a Deduper claim; then it corrupts every field of every key the store wrote,
// one at a time (rediswalk), and checks: Get returns the value or an error
// wrapping ErrCorrupt; every merge (unfenced, fenced, once, MergeMany) succeeds
// or fails with ErrCorrupt and then writes nothing; a merge with a stale fence
// is never accepted (ErrFenced, or ErrCorrupt over a corrupt memory). On
// miniredis, the real server and a Redis Cluster.
func TestCorruptEveryField(t *testing.T) {
	for _, b := range allBackends {
		t.Run(b.name, func(t *testing.T) {
			for _, fs := range fencedStores() {
				t.Run(fs.name, func(t *testing.T) {
					walkStore(t, b.client(t), prefixFor(t), fs)
				})
			}
		})
	}
}

func walkStore(t *testing.T, c goredis.UniversalClient, prefix string, fs fencedStore) {
	ctx := t.Context()
	o := fs.open(t, c, prefix)
	d, err := redisstate.NewDeduper(c, prefix)
	must(t, err)
	k := state.Key{Entity: "e", Bucket: 7}
	must(t, o.merge(ctx, o.store, k, 1))
	must(t, o.merge(ctx, o.view(t, "l", 2), k, 1))
	if _, err := o.once(ctx, o.store, "ev", k, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MarkSeen(ctx, "seen"); err != nil {
		t.Fatal(err)
	}
	match := prefix + ":*"
	n := rediswalk.Walk(t, c, match, nil, func(cs rediswalk.Case) {
		var bad []string
		_, err := o.get(ctx, k)
		corrupt := errors.Is(err, state.ErrCorrupt)
		if err != nil && !corrupt {
			bad = append(bad, fmt.Sprintf("Get: %v", err))
		}
		if _, err := d.MarkSeen(ctx, "seen"); err != nil {
			bad = append(bad, fmt.Sprintf("MarkSeen: %v", err))
		}
		for _, w := range []struct {
			name string
			do   func() error
		}{
			// first: the merges below remember fence 2 again
			{"stale fenced MergeUpdate", func() error { return o.merge(ctx, o.view(t, "l", 1), k, 1) }},
			{"MergeUpdate", func() error { return o.merge(ctx, o.store, k, 1) }},
			{"fenced MergeUpdate", func() error { return o.merge(ctx, o.view(t, "l", 2), k, 1) }},
			{"MergeUpdateOnce (new event)", func() error { _, err := o.once(ctx, o.store, "ev2", k, 1); return err }},
			{"MergeUpdateOnce (same event)", func() error { _, err := o.once(ctx, o.store, "ev", k, 1); return err }},
			{"MergeMany", func() error {
				if o.many == nil {
					return nil
				}
				return o.many(ctx, o.store, []state.Update[int64]{{Key: k, Delta: 1}, {Key: state.Key{Entity: "f", Bucket: 1}, Delta: 1}})
			}},
		} {
			before, err := rediswalk.Snapshot(ctx, c, match)
			must(t, err)
			err = w.do()
			stale := w.name == "stale fenced MergeUpdate"
			switch {
			case err == nil && stale && cs.Value != rediswalk.Missing:
				bad = append(bad, w.name+" accepted")
				continue
			case err == nil && corrupt && w.name == "MergeUpdate":
				bad = append(bad, w.name+" over a value Get finds corrupt succeeded")
				continue
			case err == nil:
				continue
			case errors.Is(err, state.ErrCorrupt), stale && errors.Is(err, state.ErrFenced):
			default:
				bad = append(bad, fmt.Sprintf("%s: %v", w.name, err))
				continue
			}
			after, err2 := rediswalk.Snapshot(ctx, c, match)
			must(t, err2)
			if diff := rediswalk.Diff(before, after); diff != "" && w.name != "MergeMany" {
				bad = append(bad, fmt.Sprintf("%s failed (%v) but wrote: %s", w.name, err, diff))
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s: %v", cs, bad)
		}
	})
	t.Logf("%d corruptions", n)
}
