package ddbstate_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
)

// lostReplyStores are the stores and the deduper of one lost-reply row.
type lostReplyStores struct {
	sum   *ddbstate.Int64SumStore
	fsum  *ddbstate.Float64SumStore
	max   *ddbstate.Int64MaxStore
	bytes *ddbstate.BytesStore
	dedup *ddbstate.Deduper
}

// lostReplyRow is one write method: do arms the fault with arm (the operation and
// parts of the request whose response is lost), performs the write once, and
// asserts the documented outcome after the SDK's retry.
type lostReplyRow struct {
	method string
	do     func(t *testing.T, s lostReplyStores, arm func(match func(op string, body []byte) bool))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantGet fails t unless get returns one of want, found.
func wantGet[V comparable](t *testing.T, get func(context.Context, state.Key) (V, bool, error), k state.Key, want ...V) {
	t.Helper()
	got, found, err := get(t.Context(), k)
	if err != nil || !found {
		t.Fatalf("Get = %v, %v, %v; want found", got, found, err)
	}
	for _, w := range want {
		if got == w {
			return
		}
	}
	t.Fatalf("Get = %v, want one of %v", got, want)
}

// onceRow is the row of a MergeUpdateOnce: applied once, true for the caller whose
// response was lost, false for a redelivery, the delta in the value exactly once.
func onceRow[V comparable](method string, store func(lostReplyStores) state.OnceStore[V], delta, want V) lostReplyRow {
	return lostReplyRow{method, func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
		st, k := store(s), state.Key{Entity: "lost-" + method}
		arm(faults.Op("TransactWriteItems", "lost-"+method))
		applied, err := st.MergeUpdateOnce(t.Context(), "ev", k, delta, time.Hour)
		if err != nil || !applied {
			t.Fatalf("MergeUpdateOnce = %v, %v; want applied", applied, err)
		}
		if applied, err := st.MergeUpdateOnce(t.Context(), "ev", k, delta, time.Hour); err != nil || applied {
			t.Fatalf("redelivery: MergeUpdateOnce = %v, %v; want not applied", applied, err)
		}
		wantGet(t, st.Get, k, want)
	}}
}

// mergeRow is the row of a MergeUpdate (one UpdateItem) whose value after one merge
// of delta onto the missing key must be one of want.
func mergeRow[V comparable](method string, store func(lostReplyStores) state.Store[V], delta V, want ...V) lostReplyRow {
	return lostReplyRow{method, func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
		st, k := store(s), state.Key{Entity: "lost-" + method}
		arm(faults.Op("UpdateItem", "lost-"+method))
		must(t, st.MergeUpdate(t.Context(), k, delta, time.Hour))
		wantGet(t, st.Get, k, want...)
	}}
}

var c5 = string(storetest.Counter{}.Of(5))

// lostReplyRows lists every write method of the stores and the deduper with its
// documented outcome under a lost response: exactly once for Max, Bytes, Once merges
// and the deduper; at least once (the delta once or twice) for a plain sum.
var lostReplyRows = []lostReplyRow{
	mergeRow("Int64SumStore.MergeUpdate", func(s lostReplyStores) state.Store[int64] { return s.sum }, 5, 5, 10),
	mergeRow("Float64SumStore.MergeUpdate", func(s lostReplyStores) state.Store[float64] { return s.fsum }, 0.5, 0.5, 1),
	mergeRow("Int64MaxStore.MergeUpdate", func(s lostReplyStores) state.Store[int64] { return s.max }, 5, 5),
	{"BytesStore.MergeUpdate", func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
		k := state.Key{Entity: "lost-bytes"}
		arm(faults.Op("UpdateItem", "lost-bytes"))
		must(t, s.bytes.MergeUpdate(t.Context(), k, storetest.Counter{}.Of(5), time.Hour))
		if got, _, err := s.bytes.Get(t.Context(), k); err != nil || string(got) != c5 {
			t.Fatalf("Get = %v, %v; want Counter(5)", got, err)
		}
	}},
	onceRow("Int64SumStore.MergeUpdateOnce", func(s lostReplyStores) state.OnceStore[int64] { return s.sum }, 5, 5),
	onceRow("Float64SumStore.MergeUpdateOnce", func(s lostReplyStores) state.OnceStore[float64] { return s.fsum }, 0.5, 0.5),
	// The fallback for a sum DynamoDB cannot hold exactly (0.5 + 1e-50): a read, then
	// the float64 sum written with the claim; its lost response must neither apply
	// nor claim twice. The fault skips the refused ADD, which carries the delta.
	{"Float64SumStore.MergeUpdateOnce", func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
		k := state.Key{Entity: "lost-float-fallback"}
		must(t, s.fsum.MergeUpdate(t.Context(), k, 0.5, time.Hour))
		fallback := faults.Op("TransactWriteItems", "lost-float-fallback")
		delta := []byte(strconv.FormatFloat(1e-50, 'f', -1, 64)) // as the ADD sends it
		arm(func(op string, body []byte) bool { return fallback(op, body) && !bytes.Contains(body, delta) })
		applied, err := s.fsum.MergeUpdateOnce(t.Context(), "ev-fallback", k, 1e-50, time.Hour)
		if err != nil || !applied {
			t.Fatalf("MergeUpdateOnce through the fallback = %v, %v; want applied", applied, err)
		}
		if applied, err := s.fsum.MergeUpdateOnce(t.Context(), "ev-fallback", k, 1e-50, time.Hour); err != nil || applied {
			t.Fatalf("redelivery: MergeUpdateOnce = %v, %v; want not applied", applied, err)
		}
		wantGet(t, s.fsum.Get, k, 0.5)
	}},
	onceRow("Int64MaxStore.MergeUpdateOnce", func(s lostReplyStores) state.OnceStore[int64] { return s.max }, 5, 5),
	{"BytesStore.MergeUpdateOnce", func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
		k := state.Key{Entity: "lost-bytes-once"}
		arm(faults.Op("TransactWriteItems", "lost-bytes-once"))
		applied, err := s.bytes.MergeUpdateOnce(t.Context(), "ev", k, storetest.Counter{}.Of(5), time.Hour)
		if err != nil || !applied {
			t.Fatalf("MergeUpdateOnce = %v, %v; want applied", applied, err)
		}
		if applied, err := s.bytes.MergeUpdateOnce(t.Context(), "ev", k, storetest.Counter{}.Of(5), time.Hour); err != nil || applied {
			t.Fatalf("redelivery: MergeUpdateOnce = %v, %v; want not applied", applied, err)
		}
		if got, _, err := s.bytes.Get(t.Context(), k); err != nil || string(got) != c5 {
			t.Fatalf("Get = %v, %v; want Counter(5)", got, err)
		}
	}},
	{"Deduper.MarkSeen", func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
		arm(faults.Op("PutItem", "lost-seen"))
		if first, err := s.dedup.MarkSeen(t.Context(), "lost-seen"); err != nil || !first {
			t.Fatalf("MarkSeen = %v, %v; want first", first, err)
		}
		if first, err := s.dedup.MarkSeen(t.Context(), "lost-seen"); err != nil || first {
			t.Fatalf("second MarkSeen = %v, %v; want not first", first, err)
		}
	}},
	{"Deduper.Release", func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
		if first, err := s.dedup.MarkSeen(t.Context(), "lost-release"); err != nil || !first {
			t.Fatalf("MarkSeen = %v, %v; want first", first, err)
		}
		arm(faults.Op("DeleteItem", "lost-release"))
		must(t, s.dedup.Release(t.Context(), "lost-release"))
		if first, err := s.dedup.MarkSeen(t.Context(), "lost-release"); err != nil || !first {
			t.Fatalf("MarkSeen after Release = %v, %v; want first", first, err)
		}
	}},
}

// TestLostReply drops the response to every write method after DynamoDB applied
// the request, so that the SDK retries, and checks the documented outcome.
func TestLostReply(t *testing.T) {
	var names []string
	for _, r := range lostReplyRows {
		names = append(names, r.method)
	}
	storetest.CoverWriteMethods(t, names, &ddbstate.Int64SumStore{}, &ddbstate.Float64SumStore{}, &ddbstate.Int64MaxStore{}, &ddbstate.BytesStore{}, &ddbstate.Deduper{})
	e := envFor(t)
	tr := faults.NewTransport()
	c := testenv.DynamoDBClient(t, func(o *ddb.Options) { o.HTTPClient = &http.Client{Transport: tr} })
	opts := []ddbstate.StoreOption{ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup)}
	var s lostReplyStores
	var errs [5]error
	s.sum, errs[0] = ddbstate.NewInt64SumStore(c, e.values, opts...)
	s.fsum, errs[1] = ddbstate.NewFloat64SumStore(c, e.values, opts...)
	s.max, errs[2] = ddbstate.NewInt64MaxStore(c, e.values, opts...)
	s.bytes, errs[3] = ddbstate.NewBytesStore(c, e.bytes, storetest.Counter{}, opts...)
	s.dedup, errs[4] = ddbstate.NewDeduper(c, e.dedup, ddbstate.WithClock(e.clock.Now))
	must(t, errors.Join(errs[:]...))
	for _, r := range lostReplyRows {
		t.Run(r.method, func(t *testing.T) {
			before := tr.Dropped()
			r.do(t, s, tr.DropReply)
			if got := tr.Dropped() - before; got != 1 {
				t.Fatalf("%d responses dropped, want 1: the fault did not fire", got)
			}
		})
	}
}
