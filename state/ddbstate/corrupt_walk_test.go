package ddbstate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/ddbwalk"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/types"
)

// walkOps are the reads and merges of one store the walk runs.
type walkOps struct {
	name  string
	kind  string // the store kind in its items' keys
	get   func(ctx context.Context) error
	many  func(ctx context.Context) error // GetMany (and GetRevisions)
	merge func(ctx context.Context, fence int64) error
	once  func(ctx context.Context, event string) error
	batch func(ctx context.Context) error // MergeMany, nil without one
}

func opsOf[V any](name, kind string, s state.OnceStore[V], delta V) walkOps {
	k, k2 := state.Key{Entity: "e", Bucket: 7}, state.Key{Entity: "f", Bucket: 1}
	view := func(fence int64) state.Store[V] {
		if fence == 0 {
			return s
		}
		v, err := state.Fenced[V](s, types.Lease{Key: "l", Token: "t", Fence: fence})
		if err != nil {
			panic(err)
		}
		return v
	}
	o := walkOps{
		name: name,
		kind: kind,
		get:  func(ctx context.Context) error { _, _, err := s.Get(ctx, k); return err },
		many: func(ctx context.Context) error {
			_, _, err := s.GetMany(ctx, []state.Key{k, k2})
			if rs, ok := s.(state.RevisionStore[V]); ok && err == nil {
				_, err = rs.GetRevisions(ctx, []state.Key{k, k2})
			}
			return err
		},
		merge: func(ctx context.Context, fence int64) error { return view(fence).MergeUpdate(ctx, k, delta, time.Hour) },
		once: func(ctx context.Context, event string) error {
			_, err := s.MergeUpdateOnce(ctx, event, k, delta, time.Hour)
			return err
		},
	}
	if b, ok := s.(state.BatchStore[V]); ok {
		o.batch = func(ctx context.Context) error {
			return b.MergeMany(ctx, []state.Update[V]{{Key: k, Delta: delta, TTL: time.Hour}, {Key: k2, Delta: delta}})
		}
	}
	return o
}

// TestCorruptEveryAttribute writes, with each store, a value by an unfenced
// merge, a fenced merge (its fence attribute) and a once-merge (its claim), and
// a Deduper claim; then it corrupts every attribute of every item of the
// value, bytes and dedup tables, one at a time (ddbwalk), and checks: Get,
// GetMany and GetRevisions return the values or an error wrapping ErrCorrupt;
// a merge with a stale fence is never accepted; every other merge succeeds or
// fails with ErrCorrupt, and then writes nothing; a value Get finds corrupt
// refuses an unfenced merge with ErrCorrupt. Each case runs the calls of the
// store whose item (value, or once-claim) it corrupted.
func TestCorruptEveryAttribute(t *testing.T) {
	e := envFor(t)
	c := testenv.DynamoDBClient(t)
	ctx := t.Context()
	opts := []ddbstate.StoreOption{ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup)}
	sum, err1 := ddbstate.NewInt64SumStore(c, e.values, opts...)
	fsum, err2 := ddbstate.NewFloat64SumStore(c, e.values, opts...)
	max, err3 := ddbstate.NewInt64MaxStore(c, e.values, opts...)
	bs, err4 := ddbstate.NewBytesStore(c, e.bytes, storetest.Counter{}, opts...)
	d, err5 := ddbstate.NewDeduper(c, e.dedup, ddbstate.WithClock(e.clock.Now))
	must(t, errors.Join(err1, err2, err3, err4, err5))
	stores := []walkOps{
		opsOf[int64]("Int64SumStore", "isum#", sum, 1),
		opsOf[float64]("Float64SumStore", "fsum#", fsum, 0.5),
		opsOf[int64]("Int64MaxStore", "imax#", max, 7),
		opsOf[[]byte]("BytesStore", "bytes.", bs, storetest.Counter{}.Of(1)),
	}
	for _, s := range stores {
		must(t, s.merge(ctx, 0))
		must(t, s.merge(ctx, 2))
		must(t, s.once(ctx, "ev"))
	}
	if _, err := d.MarkSeen(ctx, "seen"); err != nil {
		t.Fatal(err)
	}
	tables := func() string {
		return ddbwalk.Items(t, c, e.values) + ddbwalk.Items(t, c, e.bytes) + ddbwalk.Items(t, c, e.dedup)
	}
	check := func(cs ddbwalk.Case) {
		var bad []string
		for _, s := range stores {
			if !strings.Contains(cs.Key, s.kind) {
				continue // another store's item (or a Deduper's claim)
			}
			err := s.get(ctx)
			corrupt := errors.Is(err, state.ErrCorrupt)
			if err != nil && !corrupt {
				bad = append(bad, fmt.Sprintf("%s.Get: %v", s.name, err))
			}
			if err := s.many(ctx); err != nil && !errors.Is(err, state.ErrCorrupt) {
				bad = append(bad, fmt.Sprintf("%s.GetMany: %v", s.name, err))
			}
			for _, w := range []struct {
				name string
				do   func() error
			}{
				// first: the merges below remember fence 2 again
				{"stale fenced MergeUpdate", func() error { return s.merge(ctx, 1) }},
				{"MergeUpdate", func() error { return s.merge(ctx, 0) }},
				{"fenced MergeUpdate", func() error { return s.merge(ctx, 2) }},
				{"MergeUpdateOnce (new event)", func() error { return s.once(ctx, "ev2") }},
				{"MergeUpdateOnce (same event)", func() error { return s.once(ctx, "ev") }},
				{"MergeMany", func() error {
					if s.batch == nil {
						return nil
					}
					return s.batch(ctx)
				}},
			} {
				before := tables()
				err := w.do()
				stale := w.name == "stale fenced MergeUpdate"
				switch {
				case err == nil && stale && cs.Value != "missing":
					bad = append(bad, s.name+": "+w.name+" accepted")
					continue
				case err == nil && corrupt && w.name == "MergeUpdate" && cs.Value != "missing":
					// (a merge into an item without v writes the delta, as into a missing value)
					bad = append(bad, s.name+": "+w.name+" over a value Get finds corrupt succeeded")
					continue
				case err == nil:
					continue
				case errors.Is(err, state.ErrCorrupt), stale && errors.Is(err, state.ErrFenced):
				default:
					bad = append(bad, fmt.Sprintf("%s: %s: %v", s.name, w.name, err))
					continue
				}
				if after := tables(); after != before && w.name != "MergeMany" {
					bad = append(bad, fmt.Sprintf("%s: %s failed (%v) but wrote", s.name, w.name, err))
				}
			}
		}
		if _, err := d.MarkSeen(ctx, "seen"); err != nil {
			bad = append(bad, fmt.Sprintf("MarkSeen: %v", err))
		}
		if len(bad) > 0 {
			t.Errorf("%s: %v", cs, bad)
		}
	}
	n := ddbwalk.Walk(t, c, e.values, []string{"pk", "sk"}, nil, check)
	n += ddbwalk.Walk(t, c, e.bytes, []string{"pk", "sk"}, nil, check)
	n += ddbwalk.Walk(t, c, e.dedup, []string{"pk"}, nil, check)
	t.Logf("%d corruptions", n)
}
