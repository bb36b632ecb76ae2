package redisstate_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// The MergeMany rows of TestLostReply: a pipeline whose reply is lost is sent again
// by go-redis, so its updates have MergeUpdate's outcome (sums at least once, max
// once).
func init() {
	lostReplyRows = append(lostReplyRows,
		batchRow("Int64SumStore.MergeMany", func(s lostReplyStores) state.BatchStore[int64] { return s.sum }, 5, 5, 10),
		batchRow("Float64SumStore.MergeMany", func(s lostReplyStores) state.BatchStore[float64] { return s.fsum }, 0.5, 0.5, 1),
		batchRow("Int64MaxStore.MergeMany", func(s lostReplyStores) state.BatchStore[int64] { return s.max }, 5, 5),
	)
}

// batchRow is the row of a MergeMany of two keys of one entity (one script call on
// every backend), whose reply is lost: both keys have MergeUpdate's outcome, and
// the same one.
func batchRow[V comparable](method string, store func(lostReplyStores) state.BatchStore[V], delta V, want ...V) lostReplyRow {
	return lostReplyRow{method, func(t *testing.T, s lostReplyStores, arm func(...string)) {
		st := store(s)
		a, b := state.Key{Entity: "lost-" + method, Bucket: 1}, state.Key{Entity: "lost-" + method, Bucket: 2}
		// A first batch loads the script, so that the lost reply is an applied one.
		must(t, st.MergeMany(t.Context(), []state.Update[V]{{Key: state.Key{Entity: "warm-" + method}, Delta: delta}}))
		arm("evalsha", "lost-"+method)
		must(t, st.MergeMany(t.Context(), []state.Update[V]{{Key: a, Delta: delta, TTL: time.Hour}, {Key: b, Delta: delta}}))
		wantGet(t, st.Get, a, want...)
		got, _, err := st.Get(t.Context(), a)
		must(t, err)
		wantGet(t, st.Get, b, got)
	}}
}

// TestMergeManyScriptLoad: a batch the server has no script for (the first, and
// the first after SCRIPT FLUSH) is sent again with EVAL in one more round trip,
// recorded once per script call, and applied once. Only on miniredis (flushing a
// shared server's scripts would add round trips to other tests), where one script
// call takes a chunk.
func TestMergeManyScriptLoad(t *testing.T) {
	c := miniBackend.client(t)
	n := testenv.CountRedis(c)
	sig := signaltest.NewSignals()
	s, err := redisstate.NewInt64SumStore(c, prefixFor(t), redisstate.WithMeterProvider(sig.Meter), redisstate.WithLogger(sig.Log))
	if err != nil {
		t.Fatal(err)
	}
	ups := make([]state.Update[int64], state.MergeBatchSize+1)
	for i := range ups {
		ups[i] = state.Update[int64]{Key: state.Key{Entity: fmt.Sprint("k", i)}, Delta: 1}
	}
	steps := []struct {
		name              string
		do                func() error
		roundTrips, loads int64
	}{
		// two chunks: NOSCRIPT and EVAL for the first, EVALSHA for the second
		{"first batch", func() error { return s.MergeMany(t.Context(), ups) }, 3, 1},
		{"second batch", func() error { return s.MergeMany(t.Context(), ups) }, 2, 1},
		{"flush", func() error { return c.ScriptFlush(t.Context()).Err() }, 1, 1},
		{"batch after flush", func() error { return s.MergeMany(t.Context(), ups[:10]) }, 2, 2},
	}
	for _, st := range steps {
		n.Reset()
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := n.Load(); got != st.roundTrips {
			t.Errorf("%s: %d round trips, want %d", st.name, got, st.roundTrips)
		}
		if got := sig.Collect(t, "pipestate.redis.script.loads", attribute.String("db.system.name", "redis")).Value; got != st.loads {
			t.Errorf("after %s: %d script loads recorded, want %d", st.name, got, st.loads)
		}
	}
	if n := sig.Logs(slog.LevelDebug, "pipestate: script reloaded after NOSCRIPT"); n != 2 {
		t.Errorf("%d reload records logged, want 2:\n%s", n, sig.LogText())
	}
	vs, _, err := s.GetMany(t.Context(), []state.Key{ups[0].Key, ups[9].Key, ups[10].Key, ups[state.MergeBatchSize].Key})
	if err != nil || vs[0] != 3 || vs[1] != 3 || vs[2] != 2 || vs[3] != 2 {
		t.Errorf("values %v (%v), want [3 3 2 2]: every update applied once", vs, err)
	}
}
