package ddbstate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/types"
)

// The fenced rows of TestLostReply, two per merge method of every store:
// "fenced", a merge fenced 5 whose response is lost has the unfenced merge's
// outcome (a MergeUpdateOnce applied once, and a redelivery not) and remembers
// its fence (a merge fenced 4 is then refused); "fenced refused", a merge
// fenced 4 after one fenced 5, whose refusal is lost, is refused again on the
// SDK's retry and writes nothing.
func init() {
	for _, variant := range []string{"fenced", "fenced refused"} {
		lostReplyRows = append(lostReplyRows,
			fencedRow(variant, "Int64SumStore.MergeUpdate", func(s lostReplyStores) state.Store[int64] { return s.sum }, 5, 5, 10),
			fencedRow(variant, "Int64SumStore.MergeUpdateOnce", func(s lostReplyStores) state.Store[int64] { return s.sum }, 5, 5),
			fencedRow(variant, "Int64SumStore.MergeMany", func(s lostReplyStores) state.Store[int64] { return s.sum }, 5, 5, 10),
			fencedRow(variant, "Float64SumStore.MergeUpdate", func(s lostReplyStores) state.Store[float64] { return s.fsum }, 0.5, 0.5, 1),
			fencedRow(variant, "Float64SumStore.MergeUpdateOnce", func(s lostReplyStores) state.Store[float64] { return s.fsum }, 0.5, 0.5),
			fencedRow(variant, "Float64SumStore.MergeMany", func(s lostReplyStores) state.Store[float64] { return s.fsum }, 0.5, 0.5, 1),
			fencedRow(variant, "Int64MaxStore.MergeUpdate", func(s lostReplyStores) state.Store[int64] { return s.max }, 5, 5),
			fencedRow(variant, "Int64MaxStore.MergeUpdateOnce", func(s lostReplyStores) state.Store[int64] { return s.max }, 5, 5),
			fencedRow(variant, "Int64MaxStore.MergeMany", func(s lostReplyStores) state.Store[int64] { return s.max }, 5, 5),
			fencedRow(variant, "BytesStore.MergeUpdate", func(s lostReplyStores) state.Store[[]byte] { return s.bytes }, storetest.Counter{}.Of(5), storetest.Counter{}.Of(5)),
			fencedRow(variant, "BytesStore.MergeUpdateOnce", func(s lostReplyStores) state.Store[[]byte] { return s.bytes }, storetest.Counter{}.Of(5), storetest.Counter{}.Of(5)),
			fencedRow(variant, "BytesStore.MergeMany", func(s lostReplyStores) state.Store[[]byte] { return s.bytes }, storetest.Counter{}.Of(5), storetest.Counter{}.Of(5)),
		)
	}
}

// fencedRow is a fenced row (variant "fenced" or "fenced refused") of method, a
// merge method of the store store returns; a merge of delta onto a missing key
// leaves one of want.
func fencedRow[V any](variant, method string, store func(lostReplyStores) state.Store[V], delta V, want ...V) lostReplyRow {
	kind := method[strings.IndexByte(method, '.')+1:]
	return lostReplyRow{method, func(t *testing.T, s lostReplyStores, arm func(func(string, []byte) bool)) {
		st := store(s)
		entity := strings.ReplaceAll("fenced-"+variant+"-"+method, " ", "-")
		k := state.Key{Entity: entity}
		fenced := func(f int64) state.Store[V] {
			fs, err := state.Fenced(st, types.Lease{Key: "lease-" + entity, Token: "t", Fence: f})
			must(t, err)
			return fs
		}
		merge := func(fs state.Store[V], event string) error {
			switch kind {
			case "MergeUpdateOnce":
				applied, err := fs.(state.OnceStore[V]).MergeUpdateOnce(t.Context(), event, k, delta, time.Hour)
				if err == nil && !applied {
					return errors.New("not applied")
				}
				return err
			case "MergeMany":
				return fs.(state.BatchStore[V]).MergeMany(t.Context(), []state.Update[V]{{Key: k, Delta: delta, TTL: time.Hour}})
			}
			return fs.MergeUpdate(t.Context(), k, delta, time.Hour)
		}
		get := func() string {
			v, found, err := st.Get(t.Context(), k)
			must(t, err)
			if !found {
				return "missing"
			}
			return fmt.Sprint(v)
		}
		var wants []string
		for _, w := range want {
			wants = append(wants, fmt.Sprint(w))
		}
		op := "UpdateItem"
		if kind == "MergeUpdateOnce" {
			op = "TransactWriteItems"
		}
		fault := faults.Op(op, "f:lease-"+entity)
		if variant == "fenced" {
			arm(fault)
			must(t, merge(fenced(5), "ev1"))
			got := get()
			if !slices.Contains(wants, got) {
				t.Fatalf("after the lost reply: %s, want one of %v", got, wants)
			}
			if kind == "MergeUpdateOnce" {
				if err := merge(fenced(5), "ev1"); err == nil || err.Error() != "not applied" {
					t.Fatalf("redelivery: %v, want not applied", err)
				}
			}
			if err := merge(fenced(4), "ev2"); !errors.Is(err, state.ErrFenced) {
				t.Fatalf("fenced 4 after the lost reply of fenced 5: %v, want ErrFenced", err)
			}
			if now := get(); now != got {
				t.Fatalf("a refused merge wrote: %s, then %s", got, now)
			}
			return
		}
		must(t, merge(fenced(5), "ev1"))
		before := get()
		if _, ok := any(st).(*ddbstate.BytesStore); ok && kind != "MergeUpdateOnce" {
			fault = faults.Op("GetItem", "f:lease-"+entity) // its read refuses: no write is sent
		}
		arm(fault)
		if err := merge(fenced(4), "ev2"); !errors.Is(err, state.ErrFenced) {
			t.Fatalf("fenced 4 after fenced 5, its reply lost: %v, want ErrFenced", err)
		}
		if after := get(); after != before {
			t.Fatalf("a refused merge wrote: %s, then %s", before, after)
		}
	}}
}

// recorder is an http.RoundTripper that keeps the body of every request while
// on.
type recorder struct {
	mu   sync.Mutex
	on   bool
	reqs []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.mu.Lock()
		if r.on {
			r.reqs = append(r.reqs, req.Header.Get("X-Amz-Target")+" "+string(body))
		}
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (r *recorder) take(on bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs, r.on = nil, on
	return out
}

// TestUnfencedAfterFenced: an unfenced merge into a key that fenced merges
// wrote sends no fence (its requests are what they were before fencing) and
// neither checks nor resets what the key remembers: a merge fenced below the
// newest is still refused after it. Every store, every merge method.
func TestUnfencedAfterFenced(t *testing.T) {
	e := envFor(t)
	rec := &recorder{}
	c := testenv.DynamoDBClient(t, func(o *ddb.Options) { o.HTTPClient = &http.Client{Transport: rec} })
	opts := []ddbstate.StoreOption{ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup)}
	sum, err1 := ddbstate.NewInt64SumStore(c, e.values, opts...)
	fsum, err2 := ddbstate.NewFloat64SumStore(c, e.values, opts...)
	max, err3 := ddbstate.NewInt64MaxStore(c, e.values, opts...)
	bs, err4 := ddbstate.NewBytesStore(c, e.bytes, storetest.Counter{}, opts...)
	must(t, errors.Join(err1, err2, err3, err4))
	unfencedAfterFenced(t, rec, "sum", sum, 1)
	unfencedAfterFenced(t, rec, "float", fsum, 0.5)
	unfencedAfterFenced(t, rec, "max", max, 7)
	unfencedAfterFenced(t, rec, "bytes", bs, storetest.Counter{}.Of(1))
}

func unfencedAfterFenced[V any](t *testing.T, rec *recorder, name string, s state.Store[V], delta V) {
	for _, kind := range []string{"MergeUpdate", "MergeUpdateOnce", "MergeMany"} {
		t.Run(name+"/"+kind, func(t *testing.T) {
			k := state.Key{Entity: "unfenced-" + name + "-" + kind}
			lease := "lease-" + k.Entity
			n := 0
			merge := func(s state.Store[V]) error {
				n++
				switch kind {
				case "MergeUpdateOnce":
					_, err := s.(state.OnceStore[V]).MergeUpdateOnce(context.Background(), fmt.Sprint("ev", n), k, delta, 0)
					return err
				case "MergeMany":
					return s.(state.BatchStore[V]).MergeMany(context.Background(), []state.Update[V]{{Key: k, Delta: delta}})
				}
				return s.MergeUpdate(context.Background(), k, delta, 0)
			}
			fenced := func(f int64) state.Store[V] {
				fs, err := state.Fenced(s, types.Lease{Key: lease, Token: "t", Fence: f})
				must(t, err)
				return fs
			}
			rec.take(true)
			must(t, merge(fenced(5)))
			if reqs := rec.take(true); !slices.ContainsFunc(reqs, func(r string) bool { return strings.Contains(r, "f:"+lease) }) {
				t.Errorf("the fenced merge's requests name no fence attribute: %q", reqs)
			}
			must(t, merge(s))
			for _, r := range rec.take(false) {
				if strings.Contains(r, "f:") || strings.Contains(r, ":fence") {
					t.Errorf("the unfenced merge sent a fence: %s", r)
				}
			}
			if err := merge(fenced(4)); !errors.Is(err, state.ErrFenced) {
				t.Errorf("fenced 4 after fenced 5 and an unfenced merge: %v, want ErrFenced", err)
			}
			must(t, merge(fenced(5)))
		})
	}
}

// TestFencedFloatFallback: the read-modify-write of a Float64SumStore merge
// whose exact decimal sum DynamoDB refuses (0.5 + 1e-50) carries the fence
// too, for a lease key that an expression builder would read as a document
// path.
func TestFencedFloatFallback(t *testing.T) {
	e := envFor(t)
	c := testenv.DynamoDBClient(t)
	s, err := ddbstate.NewFloat64SumStore(c, e.values, ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup))
	must(t, err)
	fenced := func(f int64) state.OnceStore[float64] {
		fs, err := state.Fenced[float64](s, types.Lease{Key: "jobs.daily[0]", Token: "t", Fence: f})
		must(t, err)
		return fs.(state.OnceStore[float64])
	}
	ctx := t.Context()
	for _, once := range []bool{false, true} {
		k := state.Key{Entity: fmt.Sprint("fallback-", once)}
		merge := func(fs state.OnceStore[float64], d float64, ev string) error {
			if once {
				_, err := fs.MergeUpdateOnce(ctx, ev, k, d, 0)
				return err
			}
			return fs.MergeUpdate(ctx, k, d, 0)
		}
		must(t, merge(fenced(5), 0.5, "e1"))
		must(t, merge(fenced(5), 1e-50, "e2")) // through the fallback
		if err := merge(fenced(4), 1e-50, "e3"); !errors.Is(err, state.ErrFenced) {
			t.Fatalf("once %v: fenced 4 through the fallback: %v, want ErrFenced", once, err)
		}
		if v, _, err := s.Get(ctx, k); err != nil || v != 0.5 {
			t.Fatalf("once %v: Get = %v, %v; want 0.5", once, v, err)
		}
	}
}

// TestFencedIdentityMergeIntoLiveItem: a fenced merge of 0 into a live item of
// an Int64SumStore is applied (found by the state simulation, seed
// 1795870222375294381 of testdata/sim.seeds). Before the fix its condition
// was "((live)) AND fence", which DynamoDB refuses with a ValidationException
// ("redundant parentheses").
func TestFencedIdentityMergeIntoLiveItem(t *testing.T) {
	s := storeOpener[int64](ddbstate.NewInt64SumStore)(t)
	defer s.Close()
	fs, err := state.Fenced(s, types.Lease{Key: "job", Token: "t", Fence: 1})
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Entity: "identity"}
	for _, ttl := range []time.Duration{0, time.Minute} {
		if err := s.MergeUpdate(t.Context(), k, 2, 0); err != nil {
			t.Fatal(err)
		}
		if err := fs.MergeUpdate(t.Context(), k, 0, ttl); err != nil {
			t.Errorf("fenced MergeUpdate of 0 with ttl %v into a live item: %v", ttl, err)
		}
	}
	if v, found, err := s.Get(t.Context(), k); err != nil || !found || v != 4 {
		t.Errorf("Get = %d, %v, %v; want 4, true", v, found, err)
	}
}
