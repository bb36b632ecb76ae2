package ddbstate_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
)

// The MergeMany rows of TestLostReply: the update whose response is lost has
// MergeUpdate's outcome, the others are applied once.
func init() {
	lostReplyRows = append(lostReplyRows,
		batchRow("Int64SumStore.MergeMany", func(s lostReplyStores) state.BatchStore[int64] { return s.sum }, 5, 5, 10),
		batchRow("Float64SumStore.MergeMany", func(s lostReplyStores) state.BatchStore[float64] { return s.fsum }, 0.5, 0.5, 1),
		batchRow("Int64MaxStore.MergeMany", func(s lostReplyStores) state.BatchStore[int64] { return s.max }, 5, 5),
		lostReplyRow{"BytesStore.MergeMany", func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
			lost, other := state.Key{Entity: "lost-bytes-many"}, state.Key{Entity: "other-bytes-many"}
			arm(faults.Op("UpdateItem", "lost-bytes-many"))
			d := storetest.Counter{}.Of(5)
			must(t, s.bytes.MergeMany(t.Context(), []state.Update[[]byte]{{Key: lost, Delta: d, TTL: time.Hour}, {Key: other, Delta: d}}))
			for _, k := range []state.Key{lost, other} {
				if got, _, err := s.bytes.Get(t.Context(), k); err != nil || string(got) != c5 {
					t.Fatalf("Get(%v) = %v, %v; want Counter(5)", k, got, err)
				}
			}
		}},
	)
}

// batchRow is the row of a MergeMany of two updates, the first's response lost.
func batchRow[V comparable](method string, store func(lostReplyStores) state.BatchStore[V], delta V, want ...V) lostReplyRow {
	return lostReplyRow{method, func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
		st := store(s)
		lost, other := state.Key{Entity: "lost-" + method}, state.Key{Entity: "other-" + method}
		arm(faults.Op("UpdateItem", "lost-"+method))
		must(t, st.MergeMany(t.Context(), []state.Update[V]{{Key: lost, Delta: delta, TTL: time.Hour}, {Key: other, Delta: delta}}))
		wantGet(t, st.Get, lost, want...)
		wantGet(t, st.Get, other, delta)
	}}
}

// inFlight is an http.RoundTripper counting requests (less SDK retries) and the most in flight at
// once. No request goes on until full are in flight together (or, for a store
// that never runs that many at once, until one waited 10 s), so a store allowed full concurrent
// requests is seen running exactly full, whatever the scheduler does.
type inFlight struct {
	next            http.RoundTripper
	full            int64
	reached         chan struct{} // closed when full requests are in flight
	once            sync.Once
	n, now, highest atomic.Int64
}

func newInFlight(full int64) *inFlight {
	return &inFlight{next: http.DefaultTransport, full: full, reached: make(chan struct{})}
}

func (f *inFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	if !testenv.SDKRetry(r) { // a loaded DynamoDB Local's lock timeout, retried
		f.n.Add(1)
	}
	now := f.now.Add(1)
	defer f.now.Add(-1)
	for h := f.highest.Load(); now > h && !f.highest.CompareAndSwap(h, now); h = f.highest.Load() {
	}
	if now >= f.full {
		f.once.Do(func() { close(f.reached) })
	}
	select {
	case <-f.reached:
	case <-time.After(10 * time.Second): // never full: let every request go on
		f.once.Do(func() { close(f.reached) })
	}
	return f.next.RoundTrip(r)
}

// TestMergeManyConcurrency: MergeMany costs one UpdateItem per update (here every
// item is new) and runs at most WithBatchConcurrency at once, the default
// state.DefaultMergeConcurrency; bad options are refused.
func TestMergeManyConcurrency(t *testing.T) {
	e := envFor(t)
	for _, tc := range []struct {
		name string
		opts []ddbstate.StoreOption
		want int64
	}{
		{"default", nil, state.DefaultMergeConcurrency},
		{"4", []ddbstate.StoreOption{ddbstate.WithBatchConcurrency(4)}, 4},
		{"1", []ddbstate.StoreOption{ddbstate.WithBatchConcurrency(1)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newInFlight(tc.want)
			c := testenv.DynamoDBClient(t, func(o *ddb.Options) { o.HTTPClient = &http.Client{Transport: f} })
			s, err := ddbstate.NewInt64SumStore(c, e.values, append(tc.opts, ddbstate.WithClock(e.clock.Now))...)
			if err != nil {
				t.Fatal(err)
			}
			ups := make([]state.Update[int64], 3*state.DefaultMergeConcurrency)
			for i := range ups {
				ups[i] = state.Update[int64]{Key: state.Key{Entity: fmt.Sprint(t.Name(), i)}, Delta: 1}
			}
			must(t, s.MergeMany(t.Context(), ups))
			if n, h := f.n.Load(), f.highest.Load(); n != int64(len(ups)) || h != tc.want {
				t.Errorf("%d requests, %d at once; want %d, %d at once", n, h, len(ups), tc.want)
			}
		})
	}
	if _, err := ddbstate.NewInt64SumStore(testenv.DynamoDBClient(t), e.values, ddbstate.WithBatchConcurrency(0)); err == nil {
		t.Error("WithBatchConcurrency(0) accepted")
	}
}
