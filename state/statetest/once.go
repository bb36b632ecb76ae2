package statetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/state"
)

// RunOnceStore runs the OnceStore conformance suite: Open must return stores that
// implement state.OnceStore. RunStore calls it for such stores.
func RunOnceStore[V any](t *testing.T, h Harness[V]) {
	h.check(t)
	t.Run("applies once", func(t *testing.T) { testAppliesOnce(t, &h) })
	t.Run("redelivery", func(t *testing.T) { testRedelivery(t, &h) })
	t.Run("claim per key", func(t *testing.T) { testClaimPerKey(t, &h) })
	t.Run("bad input", func(t *testing.T) { testOnceBadInput(t, &h) })
	t.Run("failed merge does not claim", func(t *testing.T) { testFailedMergeDoesNotClaim(t, &h) })
	t.Run("claim ids are injective", func(t *testing.T) { testClaimIDsInjective(t, &h) })
	t.Run("same event at once", func(t *testing.T) { testSameEventAtOnce(t, &h) })
	if !h.SkipTTL {
		t.Run("merge resets expiry", func(t *testing.T) { testOnceResetsExpiry(t, &h) })
		t.Run("claim outlives value ttl", func(t *testing.T) { testClaimOutlivesValue(t, &h) })
		t.Run("claim expires after dedup ttl", func(t *testing.T) { testClaimExpires(t, &h) })
		t.Run("redelivery keeps the claim's expiry", func(t *testing.T) { testRedeliveryKeepsClaimExpiry(t, &h) })
	}
}

// openOnce opens a store and fails the test unless it is a state.OnceStore.
func (h *Harness[V]) openOnce(t *testing.T) state.OnceStore[V] {
	t.Helper()
	s, ok := h.open(t).(state.OnceStore[V])
	if !ok {
		t.Fatal("the store does not implement state.OnceStore")
	}
	return s
}

func mustOnce[V any](t *testing.T, s state.OnceStore[V], id string, k state.Key, delta V) bool {
	t.Helper()
	applied, err := s.MergeUpdateOnce(t.Context(), id, k, delta, 0)
	if err != nil {
		t.Fatalf("MergeUpdateOnce(%q, %v): %v", id, k, err)
	}
	return applied
}

func testAppliesOnce[V any](t *testing.T, h *Harness[V]) {
	s1, s2 := h.openOnce(t), h.openOnce(t)
	k := state.Key{Entity: "once", Bucket: 2}
	if !mustOnce(t, s1, "event-1", k, h.Delta(0)) {
		t.Fatal("first delivery of event-1 not applied")
	}
	if mustOnce(t, s2, "event-1", k, h.Delta(0)) {
		t.Error("second delivery of event-1 applied")
	}
	if !mustOnce(t, s2, "event-2", k, h.Delta(1)) {
		t.Error("first delivery of event-2 not applied")
	}
	// IDs that differ only in delimiters are different events.
	if !mustOnce(t, s1, "event:1", k, h.Delta(2)) {
		t.Error("event:1 treated as a redelivery of another event")
	}
	wantValue(t, h, s1, k, h.fold(0, 3))
}

// testClaimPerKey checks the scope of a claim: (event ID, key). One event updates
// several keys — other entities, other buckets, entities that only differ around
// delimiters — each exactly once.
func testClaimPerKey[V any](t *testing.T, h *Harness[V]) {
	s1, s2 := h.openOnce(t), h.openOnce(t)
	keys := []state.Key{{Entity: "per-key"}, {Entity: "per-key", Bucket: 7}, {Entity: "per-key:7"}, {Entity: "per"}}
	for i, k := range keys {
		if !mustOnce(t, s1, "shared-event", k, h.Delta(i)) {
			t.Errorf("shared-event on %v not applied: its claim on another key leaked", k)
		}
	}
	for _, k := range keys {
		if mustOnce(t, s2, "shared-event", k, h.Delta(99)) {
			t.Errorf("redelivered shared-event on %v applied again", k)
		}
	}
	for i, k := range keys {
		wantValue(t, h, s1, k, h.fold(i, i+1))
	}
}

func testRedelivery[V any](t *testing.T, h *Harness[V]) {
	stores := []state.OnceStore[V]{h.openOnce(t), h.openOnce(t)}
	keys := []state.Key{{Entity: "redelivered"}, {Entity: "redelivered", Bucket: 1}}
	// Every event is delivered Deliveries times; each deliverer walks all
	// deliveries in its own order.
	type delivery struct{ event int }
	var queue []delivery
	for range Deliveries {
		for e := range RedeliveryEvents {
			queue = append(queue, delivery{e})
		}
	}
	var (
		next    atomic.Int64
		applied [RedeliveryEvents]atomic.Int32
		wg      sync.WaitGroup
		errs    = make(chan error, Deliverers)
	)
	for g := range Deliverers {
		wg.Go(func() {
			s := stores[g%len(stores)]
			for {
				i := int(next.Add(1)) - 1
				if i >= len(queue) {
					return
				}
				e := queue[i].event
				ok, err := s.MergeUpdateOnce(t.Context(), fmt.Sprintf("evt-%d", e), keys[e%2], h.Delta(e), 0)
				for errors.Is(err, state.ErrContention) {
					ok, err = s.MergeUpdateOnce(t.Context(), fmt.Sprintf("evt-%d", e), keys[e%2], h.Delta(e), 0)
				}
				if err != nil {
					errs <- fmt.Errorf("deliverer %d event %d: %w", g, e, err)
					return
				}
				if ok {
					applied[e].Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for e := range RedeliveryEvents {
		if n := applied[e].Load(); n != 1 {
			t.Errorf("event %d applied %d times, want exactly once", e, n)
		}
	}
	for j, k := range keys {
		want := h.Monoid.Identity()
		for e := j; e < RedeliveryEvents; e += 2 {
			want = h.Monoid.Combine(want, h.Delta(e))
		}
		wantValue(t, h, stores[0], k, want)
	}
}

func testOnceBadInput[V any](t *testing.T, h *Harness[V]) {
	s := h.openOnce(t)
	ctx := t.Context()
	k := state.Key{Entity: "once-bad"}
	for _, id := range []string{"", "a\nb", "a\xffb", strings.Repeat("x", state.MaxEventIDLen+1)} {
		_, err := s.MergeUpdateOnce(ctx, id, k, h.Delta(0), 0)
		wantInvalid(t, fmt.Sprintf("MergeUpdateOnce(event %q)", id), err)
	}
	for _, bk := range badKeys {
		_, err := s.MergeUpdateOnce(ctx, "bad-key-"+bk.name, bk.key, h.Delta(0), 0)
		wantInvalid(t, "MergeUpdateOnce("+bk.name+")", err)
	}
	_, err := s.MergeUpdateOnce(ctx, "negative-ttl", k, h.Delta(0), -1)
	wantInvalid(t, "MergeUpdateOnce(negative ttl)", err)
	wantMissing(t, s, k)
	// None of the rejected calls claimed its event.
	if !mustOnce(t, s, "negative-ttl", k, h.Delta(0)) {
		t.Error("a rejected MergeUpdateOnce claimed its event ID")
	}
}

// testSameEventAtOnce delivers one event to Racers callers at once, from a
// barrier, in repeated rounds: exactly one delivery is applied every round.
func testSameEventAtOnce[V any](t *testing.T, h *Harness[V]) {
	stores := []state.OnceStore[V]{h.openOnce(t), h.openOnce(t)}
	k := state.Key{Entity: "simultaneous"}
	rounds := 0
	raceRounds(t, func(round int) {
		rounds++
		id := fmt.Sprintf("evt-%d", round)
		var applied atomic.Int32
		errs := make(chan error, Racers)
		together(Racers, func(g int) {
			ok, err := stores[g%2].MergeUpdateOnce(t.Context(), id, k, h.Delta(round), 0)
			for errors.Is(err, state.ErrContention) {
				ok, err = stores[g%2].MergeUpdateOnce(t.Context(), id, k, h.Delta(round), 0)
			}
			if err != nil {
				errs <- err
				return
			}
			if ok {
				applied.Add(1)
			}
		})
		close(errs)
		for err := range errs {
			t.Fatalf("MergeUpdateOnce: %v", err)
		}
		if n := applied.Load(); n != 1 {
			t.Fatalf("round %d: %q applied by %d of %d simultaneous deliveries, want exactly 1", round, id, n, Racers)
		}
	})
	if !t.Failed() {
		wantValue(t, h, stores[0], k, h.fold(0, rounds))
	}
}

// testOnceResetsExpiry: MergeUpdateOnce sets the expiry to now+ttl like
// MergeUpdate, also part-way through an earlier ttl.
func testOnceResetsExpiry[V any](t *testing.T, h *Harness[V]) {
	s := h.openOnce(t)
	ttl := h.ttl()
	once := func(id string, i int) func(k state.Key) {
		return func(k state.Key) {
			if applied, err := s.MergeUpdateOnce(t.Context(), id, k, h.Delta(i), ttl); err != nil || !applied {
				t.Fatalf("MergeUpdateOnce(%q, %v): applied = %v, %v", id, k, applied, err)
			}
		}
	}
	observeReset(t, h, s, "once-sliding", once("first", 0), once("second", 1), h.fold(0, 2))
}

// testRedeliveryKeepsClaimExpiry: with a fake clock, a redelivery of a claimed
// event (not applied) does not extend the claim: after a redelivery half-way
// through the dedup TTL, the claim still holds just before the first delivery's
// claim expires and is gone at that instant (now >= expiry).
func testRedeliveryKeepsClaimExpiry[V any](t *testing.T, h *Harness[V]) {
	if !h.FakeTime {
		t.Skip("needs Harness.FakeTime")
	}
	s := h.openOnce(t)
	dedup := h.dedupTTL()
	k := state.Key{Entity: "claimed once"}
	if !mustOnce(t, s, "evt", k, h.Delta(0)) {
		t.Fatal("first delivery not applied")
	}
	tl := newTimeline(true, func(d time.Duration) { h.sleep(t, d) })
	tl.sleepUntil(dedup / 2)
	if mustOnce(t, s, "evt", k, h.Delta(0)) {
		t.Fatal("redelivery half-way through the dedup TTL applied")
	}
	tl.sleepUntil(tl.justBefore(dedup, dedup))
	if mustOnce(t, s, "evt", k, h.Delta(0)) {
		t.Fatalf("redelivery %v after the first delivery applied: the claim expired early", tl.now())
	}
	tl.sleepUntil(dedup)
	if !mustOnce(t, s, "evt", k, h.Delta(1)) {
		t.Errorf("redelivery at the claim's expiry (%v after the first delivery) not applied: a redelivery extended the claim", dedup)
	}
	wantValue(t, h, s, k, h.fold(0, 2))
}
