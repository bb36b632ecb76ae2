package state_test

import (
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

func TestTumblingBuckets(t *testing.T) {
	w := state.Tumbling(time.Minute)
	epoch := time.Unix(0, 0)
	tests := []struct {
		name string
		at   time.Time
		want int64
	}{
		{"epoch", epoch, 1},
		{"end of first", epoch.Add(time.Minute - 1), 1},
		{"second", epoch.Add(time.Minute), 2},
		{"just before epoch", epoch.Add(-1), -1},
		{"start of minus one", epoch.Add(-time.Minute), -1},
		{"minus two", epoch.Add(-time.Minute - 1), -2},
		{"other zone", time.Date(1970, 1, 1, 2, 3, 0, 0, time.FixedZone("x", 2*3600)), 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := w.Bucket(tt.at)
			if b != tt.want {
				t.Fatalf("Bucket = %d, want %d", b, tt.want)
			}
			if s := w.Start(b); s.After(tt.at) || !tt.at.Before(s.Add(time.Minute)) {
				t.Errorf("Start(%d) = %v does not contain %v", b, s, tt.at)
			}
		})
	}
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	if b, want := w.Bucket(far), (int64(1<<63-2))/int64(time.Minute)+1; b != want {
		t.Errorf("clamped Bucket = %d, want %d", b, want)
	}
	if b := state.Tumbling(1).Bucket(far.AddDate(-20000, 0, 0)); b != -(1<<63 - 1) {
		t.Errorf("clamped 1ns Bucket = %d, want %d", b, -(1<<63 - 1))
	}
	if b := state.Tumbling(0).Bucket(epoch); b != 0 {
		t.Errorf("invalid window Bucket = %d, want 0", b)
	}
	if _, err := state.Tumbling(-time.Second).Key("e", epoch); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("invalid window Key: %v", err)
	}
	if _, err := w.Key("e", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("Key out of range: %v", err)
	}
	if k, err := w.Key("e", epoch.Add(90*time.Second)); err != nil || k != (state.Key{Entity: "e", Bucket: 2}) {
		t.Errorf("Key = %v, %v", k, err)
	}
}

func TestReadRange(t *testing.T) {
	ctx := t.Context()
	st := newSpy[string](t, concat{})
	w := state.Tumbling(time.Hour)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for h, v := range []string{"a", "b", "", "d", "e"} {
		if v == "" {
			continue // a missing bucket
		}
		k, err := w.Key("clicks", base.Add(time.Duration(h)*time.Hour+time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.MergeUpdate(ctx, k, v, 0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := state.ReadRange[string](ctx, st, concat{}, "clicks", w, base.Add(30*time.Minute), base.Add(3*time.Hour+time.Second))
	if err != nil || got != "abd" {
		t.Errorf("ReadRange = %q, %v; want abd (buckets in time order)", got, err)
	}
	if n := st.getMany.Load(); n != 1 {
		t.Errorf("ReadRange made %d GetMany calls, want 1", n)
	}
	// Half-open: a range ending on a bucket boundary leaves that bucket out, so
	// adjacent ranges add up without overlap.
	for _, r := range []struct {
		from, to time.Duration
		want     string
	}{{0, 3 * time.Hour, "ab"}, {3 * time.Hour, 5 * time.Hour, "de"}, {time.Hour, time.Hour, ""}} {
		got, err := state.ReadRange[string](ctx, st, concat{}, "clicks", w, base.Add(r.from), base.Add(r.to))
		if err != nil || got != r.want {
			t.Errorf("ReadRange [%v, %v) = %q, %v; want %q", r.from, r.to, got, err, r.want)
		}
	}
	// Across the epoch: bucket 0 is skipped.
	got, err = state.ReadRange[string](ctx, st, concat{}, "nothing", w, time.Unix(-7200, 0), time.Unix(7200, 0))
	if err != nil || got != "" {
		t.Errorf("ReadRange across the epoch = %q, %v", got, err)
	}
	bad := []struct {
		name     string
		entity   string
		w        state.Window
		from, to time.Time
	}{
		{"from after to", "e", w, base.Add(time.Hour), base},
		{"too many buckets", "e", w, base, base.Add((state.MaxRangeBuckets + 1) * time.Hour)},
		{"huge range", "e", state.Tumbling(1), time.Unix(-1<<33, 0), time.Unix(1<<33, 0)},
		{"out of window range", "e", w, time.Unix(-1<<40, 0), time.Unix(1<<40, 0)},
		{"invalid window", "e", state.Tumbling(0), base, base},
		{"nil window", "e", nil, base, base},
		{"empty entity", "", w, base, base},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := state.ReadRange[string](ctx, st, concat{}, tt.entity, tt.w, tt.from, tt.to); !errors.Is(err, state.ErrInvalidArgument) {
				t.Errorf("err = %v, want ErrInvalidArgument", err)
			}
		})
	}
	// The largest allowed range works.
	if _, err := state.ReadRange[int64](ctx, newSpy[int64](t, monoid.Sum[int64]{}), monoid.Sum[int64]{}, "e", w, base, base.Add(state.MaxRangeBuckets*time.Hour)); err != nil {
		t.Errorf("MaxRangeBuckets buckets: %v", err)
	}
}
