package ddbstate_test

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
)

// TestRevisions: every write path of every store raises the key's revision (also
// one that restarts an expired item, one that only changes the expiry, and the
// float sum's read-modify-write fallback), a write that changes nothing does not,
// and GetRevisions reports value, found and expiry as Get does.
func TestRevisions(t *testing.T) {
	s := openStores(t)
	e := envFor(t)
	fsum, err := ddbstate.NewFloat64SumStore(testenv.DynamoDBClient(t), e.values, ddbstate.WithClock(e.clock.Now),
		ddbstate.WithDedupTable(e.dedup))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	type step struct {
		name    string
		write   func() error
		rev     func() (state.Revision[any], error)
		changes bool
	}
	rev := func(s state.RevisionStore[int64], k state.Key) func() (state.Revision[any], error) {
		return func() (state.Revision[any], error) {
			r, err := s.GetRevisions(ctx, []state.Key{k, k})
			if err != nil {
				return state.Revision[any]{}, err
			}
			if r[0] != r[1] {
				t.Fatalf("duplicate keys read differently: %+v", r)
			}
			return state.Revision[any]{Value: r[0].Value, Found: r[0].Found, Rev: r[0].Rev, Expires: r[0].Expires}, nil
		}
	}
	ks, km, kb, kf := state.Key{Entity: "sum"}, state.Key{Entity: "max"}, state.Key{Entity: "bytes"}, state.Key{Entity: "f"}
	sumRev, maxRev := rev(s.sum, ks), rev(s.max, km)
	bytesRev := func() (state.Revision[any], error) {
		r, err := s.bs.GetRevisions(ctx, []state.Key{kb})
		if err != nil {
			return state.Revision[any]{}, err
		}
		return state.Revision[any]{Value: string(r[0].Value), Found: r[0].Found, Rev: r[0].Rev, Expires: r[0].Expires}, nil
	}
	floatRev := func() (state.Revision[any], error) {
		r, err := fsum.GetRevisions(ctx, []state.Key{kf})
		if err != nil {
			return state.Revision[any]{}, err
		}
		return state.Revision[any]{Value: r[0].Value, Found: r[0].Found, Rev: r[0].Rev, Expires: r[0].Expires}, nil
	}
	c := storetest.Counter{}
	steps := []step{
		{"sum add", func() error { return s.sum.MergeUpdate(ctx, ks, 1, time.Hour) }, sumRev, true},
		{"sum add once", func() error { _, err := s.sum.MergeUpdateOnce(ctx, "e1", ks, 1, time.Hour); return err }, sumRev, true},
		{"sum once again", func() error { _, err := s.sum.MergeUpdateOnce(ctx, "e1", ks, 1, time.Hour); return err }, sumRev, false},
		{"sum after expiry", func() error { e.clock.Advance(2 * time.Hour); return s.sum.MergeUpdate(ctx, ks, 1, 0) }, sumRev, true},
		{"max rises", func() error { return s.max.MergeUpdate(ctx, km, 5, 0) }, maxRev, true},
		{"max stays, expiry set", func() error { return s.max.MergeUpdate(ctx, km, 3, time.Hour) }, maxRev, true},
		{"max stays, expiry cleared", func() error { return s.max.MergeUpdate(ctx, km, 3, 0) }, maxRev, true},
		{"max stays, nothing to do", func() error { return s.max.MergeUpdate(ctx, km, 3, 0) }, maxRev, false},
		{"bytes", func() error { return s.bs.MergeUpdate(ctx, kb, c.Of(2), 0) }, bytesRev, true},
		{"bytes once", func() error { _, err := s.bs.MergeUpdateOnce(ctx, "e2", kb, c.Of(2), time.Hour); return err }, bytesRev, true},
		{"bytes after expiry", func() error { e.clock.Advance(2 * time.Hour); return s.bs.MergeUpdate(ctx, kb, c.Of(1), 0) }, bytesRev, true},
		{"float add", func() error { return fsum.MergeUpdate(ctx, kf, 0.5, 0) }, floatRev, true},
		{"float fallback", func() error { return fsum.MergeUpdate(ctx, kf, 1e-50, 0) }, floatRev, true},
		{"float fallback once", func() error { _, err := fsum.MergeUpdateOnce(ctx, "e3", kf, 1e-50, 0); return err }, floatRev, true},
	}
	last := map[string]int64{}
	for _, st := range steps {
		kind := st.name[:3]
		if err := st.write(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		r, err := st.rev()
		if err != nil {
			t.Fatalf("%s: GetRevisions: %v", st.name, err)
		}
		switch {
		case !r.Found:
			t.Errorf("%s: not found", st.name)
		case st.changes && r.Rev <= last[kind]:
			t.Errorf("%s: revision %d after %d, want it raised", st.name, r.Rev, last[kind])
		case !st.changes && r.Rev != last[kind]:
			t.Errorf("%s: revision %d after %d, want it unchanged", st.name, r.Rev, last[kind])
		}
		last[kind] = r.Rev
	}

	// Expiry and absence as Get reports them.
	if err := s.sum.MergeUpdate(ctx, ks, 1, 90*time.Minute); err != nil {
		t.Fatal(err)
	}
	r, err := s.sum.GetRevisions(ctx, []state.Key{ks, {Entity: "never"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := e.clock.Now().Add(90 * time.Minute); !r[0].Expires.Equal(want) || r[0].Value != 2 {
		t.Errorf("sum: %+v, want value 2 expiring at %v", r[0], want)
	}
	if r[1] != (state.Revision[int64]{}) {
		t.Errorf("a key never written: %+v, want the zero Revision", r[1])
	}
	e.clock.Advance(90 * time.Minute)
	r, err = s.sum.GetRevisions(ctx, []state.Key{ks})
	if err != nil || r[0].Found || r[0].Rev != last["sum"]+1 {
		t.Errorf("sum at its expiry: %+v, %v; want not found at revision %d", r[0], err, last["sum"]+1)
	}
}
