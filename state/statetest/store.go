package statetest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/state"
)

// Sizes of the concurrency tests.
const (
	Writers          = 16  // goroutines merging concurrently
	MergesPerWriter  = 200 // merges per goroutine
	Deliverers       = 8   // goroutines redelivering events to MergeUpdateOnce
	Deliveries       = 3   // times every event is delivered
	RedeliveryEvents = 60  // distinct events in the redelivery test
	Racers           = 32  // goroutines racing for one Deduper claim
)

// adversarialKeys are distinct keys that naive encodings (delimiters, hash tags,
// bucket suffixes) collapse into one.
var adversarialKeys = []state.Key{
	{Entity: "a", Bucket: 12},
	{Entity: "a", Bucket: 1},
	{Entity: "a:1", Bucket: 2},
	{Entity: "a:12", Bucket: 0},
	{Entity: "a", Bucket: 0},
	{Entity: "a", Bucket: -12},
	{Entity: "a:", Bucket: 12},
	{Entity: "a#12", Bucket: 0},
	{Entity: "{a}", Bucket: 0},
	{Entity: "{a}:b", Bucket: 0},
	{Entity: "a b", Bucket: 0},
	{Entity: "a/b", Bucket: 0},
	{Entity: "é", Bucket: 0},
	{Entity: "e\u0301", Bucket: 0},
	{Entity: ":", Bucket: 0},
	{Entity: "#", Bucket: 0},
}

// keysFor returns the adversarial keys plus the longest entities h allows.
func keysFor[V any](h *Harness[V]) []state.Key {
	long := strings.Repeat("x", h.maxEntityLen())
	return append(adversarialKeys[:len(adversarialKeys):len(adversarialKeys)],
		state.Key{Entity: long, Bucket: 1<<63 - 1}, state.Key{Entity: long, Bucket: -1 << 63})
}

// badKeys break state.CheckKey.
var badKeys = []struct {
	name string
	key  state.Key
}{
	{"empty entity", state.Key{}},
	{"invalid utf8", state.Key{Entity: "a\xffb"}},
	{"control character", state.Key{Entity: "a\nb"}},
	{"nul", state.Key{Entity: "a\x00b"}},
}

// RunStore runs the Store conformance suite, the OnceStore and BatchStore suites
// too when the store implements state.OnceStore or state.BatchStore, and the
// sketch tests (RunSketch) when the harness describes a Sketch.
func RunStore[V any](t *testing.T, h Harness[V]) {
	h.check(t)
	t.Run("get missing", func(t *testing.T) { testGetMissing(t, &h) })
	t.Run("merge and get", func(t *testing.T) { testMergeAndGet(t, &h) })
	t.Run("read your writes", func(t *testing.T) { testReadYourWrites(t, &h) })
	t.Run("others' writes within staleness", func(t *testing.T) { testOthersWrites(t, &h) })
	t.Run("keys are distinct", func(t *testing.T) { testDistinctKeys(t, &h) })
	t.Run("get many", func(t *testing.T) { testGetMany(t, &h) })
	t.Run("get many empty", func(t *testing.T) { testGetManyEmpty(t, &h) })
	t.Run("get many past 100 keys", func(t *testing.T) { testGetManyLarge(t, &h) })
	if !h.SkipTTL {
		t.Run("ttl expires", func(t *testing.T) { testTTLExpires(t, &h) })
		t.Run("merge resets expiry", func(t *testing.T) { testMergeResetsExpiry(t, &h) })
		t.Run("ttl zero clears expiry", func(t *testing.T) { testTTLZeroClears(t, &h) })
		t.Run("expired then merged", func(t *testing.T) { testExpiredThenMerged(t, &h) })
	}
	t.Run("concurrent merges", func(t *testing.T) { testConcurrentMerges(t, &h) })
	t.Run("bad input", func(t *testing.T) { testBadInput(t, &h) })
	t.Run("closed", func(t *testing.T) { testClosed(t, &h) })
	t.Run("cancelled context", func(t *testing.T) { testCancelled(t, &h) })
	runLimits(t, &h)
	runMonoids(t, &h)
	runTiming(t, &h)
	if h.Sketch != nil {
		RunSketch(t, h)
	}
	probe := h.open(t)
	if _, ok := probe.(state.OnceStore[V]); ok {
		t.Run("once", func(t *testing.T) { RunOnceStore(t, h) })
	}
	if _, ok := probe.(state.BatchStore[V]); ok {
		t.Run("batch", func(t *testing.T) { RunBatchStore(t, h) })
	}
	t.Run("fencing", func(t *testing.T) { RunFencing(t, h) })
	t.Run("fencing race", func(t *testing.T) { RunFencingRace(t, h) })
}

// mustGet reads k and fails the test on error.
func mustGet[V any](t *testing.T, s state.Store[V], k state.Key) (V, bool) {
	t.Helper()
	v, found, err := s.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("Get(%v): %v", k, err)
	}
	return v, found
}

// mustMerge merges and fails the test on error.
func mustMerge[V any](t *testing.T, s state.Store[V], k state.Key, delta V, ttl time.Duration) {
	t.Helper()
	if err := s.MergeUpdate(t.Context(), k, delta, ttl); err != nil {
		t.Fatalf("MergeUpdate(%v): %v", k, err)
	}
}

// wantValue fails the test unless k is found with value want.
func wantValue[V any](t *testing.T, h *Harness[V], s state.Store[V], k state.Key, want V) {
	t.Helper()
	got, found := mustGet(t, s, k)
	if !found {
		t.Fatalf("Get(%v): not found, want %v", k, want)
	}
	if !h.Equal(got, want) {
		t.Fatalf("Get(%v) = %v, want %v", k, got, want)
	}
}

// wantMissing fails the test unless k is not found.
func wantMissing[V any](t *testing.T, s state.Store[V], k state.Key) {
	t.Helper()
	if got, found := mustGet(t, s, k); found {
		t.Fatalf("Get(%v) = %v, found; want missing", k, got)
	}
}

func testGetMissing[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	wantMissing(t, s, state.Key{Entity: "nothing"})
	wantMissing(t, s, state.Key{Entity: "nothing", Bucket: 7})
}

func testMergeAndGet[V any](t *testing.T, h *Harness[V]) {
	s1, s2 := h.open(t), h.open(t)
	k := state.Key{Entity: "counter"}
	mustMerge(t, s1, k, h.Delta(0), 0)
	wantValue(t, h, s2, k, h.fold(0, 1))
	mustMerge(t, s2, k, h.Delta(1), 0)
	mustMerge(t, s1, k, h.Delta(2), 0)
	wantValue(t, h, s1, k, h.fold(0, 3))
	wantValue(t, h, s2, k, h.fold(0, 3))
}

// testReadYourWrites: a write is seen by the next read through the same instance,
// also when that instance read the key just before (no read cache keeps the old
// value), by Get and by GetMany.
func testReadYourWrites[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	k := state.Key{Entity: "read-your-writes"}
	wantMissing(t, s, k)
	mustMerge(t, s, k, h.Delta(0), 0)
	wantValue(t, h, s, k, h.fold(0, 1))
	mustMerge(t, s, k, h.Delta(1), 0)
	wantValue(t, h, s, k, h.fold(0, 2))
	mustMerge(t, s, k, h.Delta(2), 0)
	wantMany(t, h, s, []state.Key{k}, h.fold(0, 3))
}

// testOthersWrites: after an instance has read a key, another instance's write of
// it is seen by the first once Harness.Staleness has passed (at once without a
// read cache), by Get and by GetMany.
func testOthersWrites[V any](t *testing.T, h *Harness[V]) {
	reader, writer := h.open(t), h.open(t)
	k := state.Key{Entity: "written-elsewhere"}
	wantMissing(t, reader, k)
	mustMerge(t, writer, k, h.Delta(0), 0)
	if h.Staleness > 0 {
		h.sleep(t, h.Staleness)
	}
	wantValue(t, h, reader, k, h.fold(0, 1))
	mustMerge(t, writer, k, h.Delta(1), 0)
	if h.Staleness > 0 {
		h.sleep(t, h.Staleness)
	}
	wantMany(t, h, reader, []state.Key{k}, h.fold(0, 2))
}

// wantMany fails the test unless GetMany(ks) finds want for every key.
func wantMany[V any](t *testing.T, h *Harness[V], s state.Store[V], ks []state.Key, want V) {
	t.Helper()
	vs, found, err := s.GetMany(t.Context(), ks)
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	for i, k := range ks {
		if !found[i] || !h.Equal(vs[i], want) {
			t.Fatalf("GetMany: %v = %v (found %v), want %v", k, vs[i], found[i], want)
		}
	}
}

func testDistinctKeys[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	keys := keysFor(h)
	for i, k := range keys {
		mustMerge(t, s, k, h.Delta(i), 0)
	}
	vs, found, err := s.GetMany(t.Context(), keys)
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(vs) != len(keys) || len(found) != len(keys) {
		t.Fatalf("GetMany returned %d values and %d flags for %d keys", len(vs), len(found), len(keys))
	}
	for i, k := range keys {
		if want := h.fold(i, i+1); !found[i] || !h.Equal(vs[i], want) {
			t.Errorf("key %q/%d: got %v (found %v), want %v: keys collide", k.Entity, k.Bucket, vs[i], found[i], want)
		}
	}
}

func testGetMany[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	a, b, c := state.Key{Entity: "a"}, state.Key{Entity: "b", Bucket: 3}, state.Key{Entity: "c"}
	mustMerge(t, s, a, h.Delta(0), 0)
	mustMerge(t, s, b, h.Delta(1), 0)
	mustMerge(t, s, b, h.Delta(2), 0)
	missing := state.Key{Entity: "missing"}
	ks := []state.Key{b, missing, a, b, c, a}
	type slot struct {
		found bool
		want  V
	}
	want := []slot{{true, h.fold(1, 3)}, {false, h.Monoid.Identity()}, {true, h.fold(0, 1)}, {true, h.fold(1, 3)}, {false, h.Monoid.Identity()}, {true, h.fold(0, 1)}}
	vs, found, err := s.GetMany(t.Context(), ks)
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(vs) != len(ks) || len(found) != len(ks) {
		t.Fatalf("GetMany returned %d values and %d flags for %d keys", len(vs), len(found), len(ks))
	}
	for i, w := range want {
		if found[i] != w.found || (w.found && !h.Equal(vs[i], w.want)) {
			t.Errorf("slot %d (%v): got %v (found %v), want %v (found %v)", i, ks[i], vs[i], found[i], w.want, w.found)
		}
	}
}

func testGetManyEmpty[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	vs, found, err := s.GetMany(t.Context(), nil)
	if err != nil || len(vs) != 0 || len(found) != 0 {
		t.Fatalf("GetMany(nil) = %v, %v, %v; want empty, nil", vs, found, err)
	}
}

// LargeGetMany is the number of distinct keys of the large GetMany test: more
// than the 100 of a DynamoDB BatchGetItem, and of typical pipeline batches.
const LargeGetMany = 250

// testGetManyLarge: a GetMany of LargeGetMany keys (one in 25 merged, the rest
// missing in between) plus duplicates answers every slot in request order.
func testGetManyLarge[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	key := func(i int) state.Key { return state.Key{Entity: fmt.Sprintf("many-%d", i), Bucket: int64(i % 3)} }
	for i := 0; i < LargeGetMany; i += 25 {
		mustMerge(t, s, key(i), h.Delta(i), 0)
	}
	var idx []int
	for j := range LargeGetMany {
		i := j * 7 % LargeGetMany // a permutation: not the order of the merges
		idx = append(idx, i)
		if j%10 == 9 {
			idx = append(idx, idx[j/2]) // a duplicate of an earlier slot
		}
	}
	ks := make([]state.Key, len(idx))
	for j, i := range idx {
		ks[j] = key(i)
	}
	vs, found, err := s.GetMany(t.Context(), ks)
	if err != nil {
		t.Fatalf("GetMany(%d keys): %v", len(ks), err)
	}
	if len(vs) != len(ks) || len(found) != len(ks) {
		t.Fatalf("GetMany returned %d values and %d flags for %d keys", len(vs), len(found), len(ks))
	}
	bad := 0
	for j, i := range idx {
		want := i%25 == 0
		if found[j] != want || (want && !h.Equal(vs[j], h.fold(i, i+1))) {
			if bad++; bad <= 5 {
				t.Errorf("slot %d (key %d): got %v (found %v), want %v (found %v)", j, i, vs[j], found[j], h.fold(i, i+1), want)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d wrong slots of %d", bad, len(ks))
	}
}

// testTTLExpires: a value expires after its ttl, and a value read while live (by
// Get and GetMany, on two instances) is invisible to both once expired: no read
// cache keeps it.
func testTTLExpires[V any](t *testing.T, h *Harness[V]) {
	s1, s2 := h.open(t), h.open(t)
	ttl := h.ttl()
	keep := state.Key{Entity: "forever"}
	mustMerge(t, s1, keep, h.Delta(1), 0)
	h.observe(t, func(tl *timeline, attempt int) string {
		k := state.Key{Entity: "session", Bucket: int64(attempt + 1)}
		merged := tl.do(func() { mustMerge(t, s1, k, h.Delta(0), ttl) })
		var (
			got   [2]V
			found [2]bool
			many  [2][]bool
		)
		reads := tl.do(func() {
			for i, s := range []state.Store[V]{s1, s2} {
				got[i], found[i] = mustGet(t, s, k)
				_, f, err := s.GetMany(t.Context(), []state.Key{keep, k})
				if err != nil || len(f) != 2 {
					t.Fatalf("GetMany while live: %v, %v", f, err)
				}
				many[i] = f
			}
		})
		if why := endsBefore(reads, merged.from+ttl, "the reads while live"); why != "" {
			return why
		}
		for i := range got {
			wantGot(t, h, k, got[i], found[i], h.fold(0, 1))
			if !many[i][0] || !many[i][1] {
				t.Fatalf("GetMany while live: found = %v; want [true true]", many[i])
			}
		}
		tl.sleepUntil(merged.to + 2*ttl)
		for _, s := range []state.Store[V]{s1, s2} {
			wantMissing(t, s, k)
			_, found, err := s.GetMany(t.Context(), []state.Key{keep, k})
			if err != nil || !found[0] || found[1] {
				t.Errorf("GetMany after expiry: found = %v, %v; want [true false]", found, err)
			}
		}
		return ""
	})
}

// wantGot fails the test unless a read of k found want.
func wantGot[V any](t *testing.T, h *Harness[V], k state.Key, got V, found bool, want V) {
	t.Helper()
	if !found {
		t.Fatalf("Get(%v): not found, want %v", k, want)
	}
	if !h.Equal(got, want) {
		t.Fatalf("Get(%v) = %v, want %v", k, got, want)
	}
}

// observeReset observes a write part-way through the ttl of an earlier one:
// first and second write k with ttl, 0.6 ttl apart; between the first write's
// expiry and the second's k must hold want (the second write set the expiry
// anew), and from the second's expiry on it is gone.
func observeReset[V any](t *testing.T, h *Harness[V], s state.Store[V], entity string, first, second func(k state.Key), want V) {
	t.Helper()
	ttl := h.ttl()
	h.observe(t, func(tl *timeline, attempt int) string {
		k := state.Key{Entity: entity, Bucket: int64(attempt)}
		a := tl.do(func() { first(k) })
		tl.sleepUntil(a.from + ttl*6/10)
		b := tl.do(func() { second(k) })
		if why := endsBefore(b, a.from+ttl, "the second write"); why != "" {
			return why // the first may have expired: the second started from Identity
		}
		// After the first write's expiry, before the second's (fake clock: 1.3 ttl
		// after the first write, 0.7 ttl after the second).
		tl.sleepUntil(between(a.to+ttl, b.from+ttl))
		var (
			got   V
			found bool
		)
		r := tl.do(func() { got, found = mustGet(t, s, k) })
		if why := startsFrom(r, a.to+ttl, "the read after the first expiry"); why != "" {
			return why
		}
		if why := endsBefore(r, b.from+ttl, "the read before the second expiry"); why != "" {
			return why
		}
		if !found || !h.Equal(got, want) {
			t.Fatalf("Get(%v) %v after the first write, %v after the second (ttl %v) = %v (found %v), want %v: the second write did not set the expiry anew",
				k, r.from-a.from, r.from-b.from, ttl, got, found, want)
		}
		tl.sleepUntil(b.to + ttl*11/10)
		wantMissing(t, s, k)
		return ""
	})
}

func testMergeResetsExpiry[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	ttl := h.ttl()
	observeReset(t, h, s, "sliding",
		func(k state.Key) { mustMerge(t, s, k, h.Delta(0), ttl) },
		func(k state.Key) { mustMerge(t, s, k, h.Delta(1), ttl) },
		h.fold(0, 2))
}

func testTTLZeroClears[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	ttl := h.ttl()
	h.observe(t, func(tl *timeline, attempt int) string {
		k := state.Key{Entity: "pinned", Bucket: int64(attempt)}
		first := tl.do(func() { mustMerge(t, s, k, h.Delta(0), ttl) })
		second := tl.do(func() { mustMerge(t, s, k, h.Delta(1), 0) })
		if why := endsBefore(second, first.from+ttl, "the merge with ttl 0"); why != "" {
			return why
		}
		tl.sleepUntil(first.to + 2*ttl)
		wantValue(t, h, s, k, h.fold(0, 2))
		return ""
	})
}

func testExpiredThenMerged[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	ttl := h.ttl()
	k := state.Key{Entity: "reborn", Bucket: 9}
	mustMerge(t, s, k, h.Delta(0), ttl)
	h.sleep(t, 2*ttl)
	mustMerge(t, s, k, h.Delta(1), 0)
	wantValue(t, h, s, k, h.fold(1, 2))
}

// mergeRetrying merges, retrying a merge that lost too many compare-and-swap races
// (state.ErrContention) up to contentionRetries times.
func mergeRetrying[V any](ctx context.Context, s state.Store[V], k state.Key, delta V) error {
	return retryContention(func() error { return s.MergeUpdate(ctx, k, delta, 0) })
}

// contentionRetries bounds retryContention: a store that reports contention
// for ever fails the test instead of hanging it.
const contentionRetries = 1000

// retryContention calls merge until it returns something other than
// state.ErrContention, or contentionRetries times.
func retryContention(merge func() error) error {
	var err error
	for range contentionRetries {
		if err = merge(); !errors.Is(err, state.ErrContention) {
			return err
		}
	}
	return fmt.Errorf("still contended after %d tries: %w", contentionRetries, err)
}

func testConcurrentMerges[V any](t *testing.T, h *Harness[V]) {
	stores := []state.Store[V]{h.open(t), h.open(t)}
	k := state.Key{Entity: "hot", Bucket: 1}
	var wg sync.WaitGroup
	errs := make(chan error, Writers)
	for w := range Writers {
		wg.Go(func() {
			s := stores[w%len(stores)]
			for i := range MergesPerWriter {
				if err := mergeRetrying(t.Context(), s, k, h.Delta(w*MergesPerWriter+i)); err != nil {
					errs <- fmt.Errorf("writer %d merge %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := h.fold(0, Writers*MergesPerWriter)
	wantValue(t, h, stores[0], k, want)
	wantValue(t, h, stores[1], k, want)
}

// wantInvalid fails the test unless err wraps state.ErrInvalidArgument.
func wantInvalid(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("%s: err = %v, want state.ErrInvalidArgument", what, err)
	}
}

func testBadInput[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	ctx := t.Context()
	bad := append(badKeys[:len(badKeys):len(badKeys)], struct {
		name string
		key  state.Key
	}{"long entity", state.Key{Entity: strings.Repeat("x", h.maxEntityLen()+1)}})
	for _, bk := range bad {
		t.Run(bk.name, func(t *testing.T) {
			err := s.MergeUpdate(ctx, bk.key, h.Delta(0), 0)
			wantInvalid(t, "MergeUpdate", err)
			_, _, err = s.Get(ctx, bk.key)
			wantInvalid(t, "Get", err)
			_, _, err = s.GetMany(ctx, []state.Key{{Entity: "fine"}, bk.key})
			wantInvalid(t, "GetMany", err)
			// The opening order: the context comes before the arguments.
			done, cancel := context.WithCancel(ctx)
			cancel()
			for what, err := range badKeyCalls(done, s, h, bk.key) {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("%s with a cancelled context: err = %v, want context.Canceled (the context comes before the arguments)", what, err)
				}
			}
		})
	}
	t.Run("negative ttl", func(t *testing.T) {
		k := state.Key{Entity: "negative-ttl"}
		wantInvalid(t, "MergeUpdate", s.MergeUpdate(ctx, k, h.Delta(0), -time.Second))
		wantMissing(t, s, k)
	})
	for i, bad := range h.BadDeltas {
		t.Run(fmt.Sprintf("bad delta %d", i), func(t *testing.T) {
			k := state.Key{Entity: fmt.Sprintf("bad-delta-%d", i)}
			wantInvalid(t, "MergeUpdate onto missing", s.MergeUpdate(ctx, k, bad, 0))
			wantMissing(t, s, k)
			mustMerge(t, s, k, h.Delta(0), 0)
			wantInvalid(t, "MergeUpdate onto existing", s.MergeUpdate(ctx, k, bad, 0))
			wantValue(t, h, s, k, h.fold(0, 1))
		})
	}
}

// badKeyCalls calls MergeUpdate, Get and GetMany of the bad key k on ctx and
// yields each call's error.
func badKeyCalls[V any](ctx context.Context, s state.Store[V], h *Harness[V], k state.Key) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if !yield("MergeUpdate", s.MergeUpdate(ctx, k, h.Delta(0), 0)) {
			return
		}
		_, _, err := s.Get(ctx, k)
		if !yield("Get", err) {
			return
		}
		_, _, err = s.GetMany(ctx, []state.Key{{Entity: "fine"}, k})
		yield("GetMany", err)
	}
}

func testClosed[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	k := state.Key{Entity: "closed"}
	mustMerge(t, s, k, h.Delta(0), 0)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	wantClosed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, state.ErrClosed) {
			t.Errorf("%s after Close: err = %v, want state.ErrClosed", what, err)
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	for what, err := range badKeyCalls(done, s, h, badKeys[0].key) {
		wantClosed(what+" of a bad key with a cancelled context (closed comes first)", err)
	}
	_, _, err := s.Get(ctx, k)
	wantClosed("Get", err)
	_, _, err = s.GetMany(ctx, []state.Key{k})
	wantClosed("GetMany", err)
	wantClosed("MergeUpdate", s.MergeUpdate(ctx, k, h.Delta(1), 0))
	if os, ok := s.(state.OnceStore[V]); ok {
		_, err := os.MergeUpdateOnce(ctx, "e", k, h.Delta(1), 0)
		wantClosed("MergeUpdateOnce", err)
	}
	wantValue(t, h, h.open(t), k, h.fold(0, 1))
}

// testCancelled: every method returns context.Canceled for a cancelled context,
// and no write changes what is stored: the value keeps its value, and the event of
// a cancelled MergeUpdateOnce is not claimed.
func testCancelled[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	k, existing := state.Key{Entity: "cancelled"}, state.Key{Entity: "cancelled", Bucket: 1}
	mustMerge(t, s, existing, h.Delta(0), 0)
	wantCanceled := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: err = %v, want context.Canceled", what, err)
		}
	}
	wantCanceled("MergeUpdate", s.MergeUpdate(ctx, k, h.Delta(1), 0))
	wantCanceled("MergeUpdate of an existing value", s.MergeUpdate(ctx, existing, h.Delta(1), 0))
	_, _, err := s.Get(ctx, k)
	wantCanceled("Get", err)
	_, _, err = s.GetMany(ctx, []state.Key{k})
	wantCanceled("GetMany", err)
	os, once := s.(state.OnceStore[V])
	if once {
		_, err := os.MergeUpdateOnce(ctx, "e", k, h.Delta(1), 0)
		wantCanceled("MergeUpdateOnce", err)
		_, err = os.MergeUpdateOnce(ctx, "e", existing, h.Delta(1), 0)
		wantCanceled("MergeUpdateOnce of an existing value", err)
	}
	wantMissing(t, s, k)
	wantValue(t, h, s, existing, h.fold(0, 1))
	if once {
		if !mustOnce(t, os, "e", existing, h.Delta(1)) {
			t.Error("a cancelled MergeUpdateOnce claimed its event")
		}
		wantValue(t, h, s, existing, h.fold(0, 2))
	}
}
