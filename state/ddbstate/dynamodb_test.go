package ddbstate_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
)

// stores opens one store of each kind on t's tables and clock.
type stores struct {
	sum *ddbstate.Int64SumStore
	max *ddbstate.Int64MaxStore
	bs  *ddbstate.BytesStore
}

func openStores(t *testing.T, opts ...ddbstate.StoreOption) stores {
	t.Helper()
	e := envFor(t)
	c := testenv.DynamoDBClient(t)
	opts = append([]ddbstate.StoreOption{ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup)}, opts...)
	sum, err1 := ddbstate.NewInt64SumStore(c, e.values, opts...)
	max, err2 := ddbstate.NewInt64MaxStore(c, e.values+"", opts...)
	bs, err3 := ddbstate.NewBytesStore(c, e.bytes, storetest.Counter{}, opts...)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return stores{sum, max, bs}
}

func TestExpiredItemsStartFromIdentity(t *testing.T) {
	s := openStores(t)
	e := envFor(t)
	ctx := t.Context()
	// Separate entities: the sum and max stores share the values table.
	ks, km, kb := state.Key{Entity: "sum"}, state.Key{Entity: "max"}, state.Key{Entity: "bytes"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.sum.MergeUpdate(ctx, ks, 100, time.Hour))
	must(s.max.MergeUpdate(ctx, km, 100, time.Hour))
	must(s.bs.MergeUpdate(ctx, kb, storetest.Counter{}.Of(100), time.Hour))
	e.clock.Advance(time.Hour) // DynamoDB Local keeps the items: only the clock says expired
	must(s.sum.MergeUpdate(ctx, ks, 5, 0))
	must(s.max.MergeUpdate(ctx, km, 5, 0))
	must(s.bs.MergeUpdate(ctx, kb, storetest.Counter{}.Of(5), 0))
	if v, ok, err := s.sum.Get(ctx, ks); err != nil || !ok || v != 5 {
		t.Errorf("sum = %d, %v, %v; want 5", v, ok, err)
	}
	if v, ok, err := s.max.Get(ctx, km); err != nil || !ok || v != 5 {
		t.Errorf("max = %d, %v, %v; want 5", v, ok, err)
	}
	if v, ok, err := s.bs.Get(ctx, kb); err != nil || !ok || string(v) != string(storetest.Counter{}.Of(5)) {
		t.Errorf("bytes = %v, %v, %v; want 5", v, ok, err)
	}
}

func TestMaxRefreshesExpiry(t *testing.T) {
	s := openStores(t)
	e := envFor(t)
	ctx, k := t.Context(), state.Key{Entity: "max"}
	if err := s.max.MergeUpdate(ctx, k, 100, time.Hour); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(50 * time.Minute)
	if err := s.max.MergeUpdate(ctx, k, 5, time.Hour); err != nil { // stays 100, expiry moves
		t.Fatal(err)
	}
	e.clock.Advance(50 * time.Minute)
	if v, ok, err := s.max.Get(ctx, k); err != nil || !ok || v != 100 {
		t.Fatalf("max = %d, %v, %v; want 100", v, ok, err)
	}
	if err := s.max.MergeUpdate(ctx, k, 7, 0); err != nil { // stays 100, expiry cleared
		t.Fatal(err)
	}
	e.clock.Advance(48 * time.Hour)
	if v, ok, err := s.max.Get(ctx, k); err != nil || !ok || v != 100 {
		t.Fatalf("max after clearing the expiry = %d, %v, %v; want 100", v, ok, err)
	}
}

// TestConcurrentMergesOntoExpired races many writers onto an expired, lingering item:
// exactly one must restart it from the identity and nobody may add onto the stale
// value.
func TestConcurrentMergesOntoExpired(t *testing.T) {
	const writers, merges = 12, 10
	for _, once := range []bool{false, true} {
		t.Run(fmt.Sprint("once=", once), func(t *testing.T) {
			s := [2]stores{openStores(t), openStores(t)}
			e := envFor(t)
			ctx, k := t.Context(), state.Key{Entity: "hot"}
			if err := s[0].sum.MergeUpdate(ctx, k, 1000, time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := s[0].bs.MergeUpdate(ctx, k, storetest.Counter{}.Of(1000), time.Hour); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Hour)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					st := s[w%2]
					for i := range merges {
						id := fmt.Sprint(w, "-", i)
						ops := []func() error{
							func() error { return st.sum.MergeUpdate(ctx, k, 1, 0) },
							func() error { return st.bs.MergeUpdate(ctx, k, storetest.Counter{}.Of(1), 0) },
						}
						if once {
							ops = []func() error{
								func() error { _, err := st.sum.MergeUpdateOnce(ctx, id, k, 1, 0); return err },
								func() error { _, err := st.bs.MergeUpdateOnce(ctx, id, k, storetest.Counter{}.Of(1), 0); return err },
							}
						}
						for _, op := range ops {
							// ErrContention promises nothing was written.
							err := op()
							for errors.Is(err, state.ErrContention) {
								err = op()
							}
							if err != nil {
								t.Error(err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			if v, _, err := s[1].sum.Get(ctx, k); err != nil || v != writers*merges {
				t.Errorf("sum = %d, %v; want %d", v, err, writers*merges)
			}
			raw, _, err := s[1].bs.Get(ctx, k)
			if v, _ := (storetest.Counter{}).Decode(raw); err != nil || v != writers*merges {
				t.Errorf("bytes = %d, %v; want %d", v, err, writers*merges)
			}
		})
	}
}

func TestOnceNeedsDedupTable(t *testing.T) {
	e := envFor(t)
	s, err := ddbstate.NewInt64SumStore(testenv.DynamoDBClient(t), e.values)
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Entity: "k"}
	if _, err := s.MergeUpdateOnce(t.Context(), "ev", k, 1, 0); !errors.Is(err, state.ErrInvalidArgument) {
		t.Fatalf("err = %v, want ErrInvalidArgument", err)
	}
	if _, ok, _ := s.Get(t.Context(), k); ok {
		t.Fatal("value written")
	}
}

func TestCreateTables(t *testing.T) {
	e := envFor(t) // created once already
	c := testenv.DynamoDBClient(t)
	ctx := t.Context()
	if err := ddbstate.CreateStoreTable(ctx, c, e.values); err != nil {
		t.Errorf("existing value table: %v", err)
	}
	if err := ddbstate.CreateDedupTable(ctx, c, e.dedup); err != nil {
		t.Errorf("existing dedup table: %v", err)
	}
	if err := ddbstate.CreateDedupTable(ctx, c, e.values); !errors.Is(err, ddbx.ErrSchemaMismatch) {
		t.Errorf("dedup over a value table: err = %v, want a schema mismatch", err)
	}
	if err := ddbstate.CreateStoreTable(ctx, c, e.dedup); !errors.Is(err, ddbx.ErrSchemaMismatch) {
		t.Errorf("store table over a dedup table: err = %v, want a schema mismatch", err)
	}
	if err := ddbstate.CreateStoreTable(ctx, c, ""); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("empty name: err = %v, want ErrInvalidArgument", err)
	}
	if err := ddbstate.CreateDedupTable(ctx, (*ddb.Client)(nil), "t"); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("typed nil client: err = %v, want ErrInvalidArgument", err)
	}
}

func TestOptions(t *testing.T) {
	var c ddbstate.API = nilAPI{}
	storetest.Invalid(t, map[string]func() error{
		"nil client":       func() error { _, err := ddbstate.NewInt64SumStore(nil, "t"); return err },
		"typed nil client": func() error { _, err := ddbstate.NewDeduper((*ddb.Client)(nil), "t"); return err },
		"typed nil monoid": func() error {
			_, err := ddbstate.NewBytesStore((*ddb.Client)(nil), "t", (*storetest.Counter)(nil))
			return err
		},
		"dedup ttl over MaxTTL": func() error {
			_, err := ddbstate.NewInt64SumStore(c, "t", ddbstate.WithDedupTTL(state.MaxTTL+1))
			return err
		},
		"empty table": func() error { _, err := ddbstate.NewInt64SumStore(c, ""); return err },
		"nil option":  func() error { _, err := ddbstate.NewInt64MaxStore(c, "t", nil); return err },
		"nil clock":   func() error { _, err := ddbstate.NewDeduper(c, "t", ddbstate.WithClock(nil)); return err },
		"nil monoid":  func() error { _, err := ddbstate.NewBytesStore(c, "t", nil); return err },
		"negative retries": func() error {
			_, err := ddbstate.NewBytesStore(c, "t", storetest.Counter{}, ddbstate.WithMaxRetries(-1))
			return err
		},
		"bad backoff": func() error {
			_, err := ddbstate.NewInt64SumStore(c, "t", ddbstate.WithBackoff(0, time.Second))
			return err
		},
		"empty dedup table":  func() error { _, err := ddbstate.NewFloat64SumStore(c, "t", ddbstate.WithDedupTable("")); return err },
		"negative dedup ttl": func() error { _, err := ddbstate.NewInt64SumStore(c, "t", ddbstate.WithDedupTTL(-1)); return err },
		"nil deduper option": func() error { _, err := ddbstate.NewDeduper(c, "t", nil); return err },
		"nil bytes option":   func() error { _, err := ddbstate.NewBytesStore(c, "t", storetest.Counter{}, nil); return err },
		"nil clock on store": func() error { _, err := ddbstate.NewInt64SumStore(c, "t", ddbstate.WithClock(nil)); return err },
		"ttl over MaxTTL":    func() error { _, err := ddbstate.NewDeduper(c, "t", ddbstate.WithDedupTTL(state.MaxTTL+1)); return err },
		"negative ttl":       func() error { _, err := ddbstate.NewDeduper(c, "t", ddbstate.WithDedupTTL(-time.Second)); return err },
		"nil meter provider": func() error { _, err := ddbstate.NewInt64SumStore(c, "t", ddbstate.WithMeterProvider(nil)); return err },
		"typed nil meter provider": func() error {
			_, err := ddbstate.NewDeduper(c, "t", ddbstate.WithMeterProvider((*sdkmetric.MeterProvider)(nil)))
			return err
		},
		"nil logger": func() error {
			_, err := ddbstate.NewBytesStore(c, "t", storetest.Counter{}, ddbstate.WithLogger(nil))
			return err
		},
	})
}

// TestOptionKinds checks which constructor takes which option, as the compiler
// does: ddbstate.NewDeduper(c, t, ddbstate.WithDedupTable("d")) and
// ddbstate.NewInt64SumStore(c, t, ...) with a Deduper-only option do not compile;
// WithDedupTTL is taken by every constructor.
func TestOptionKinds(t *testing.T) {
	stores := []string{"NewInt64SumStore", "NewFloat64SumStore", "NewInt64MaxStore", "NewBytesStore"}
	storetest.OptionKinds(t,
		map[string]any{
			"NewInt64SumStore": ddbstate.NewInt64SumStore, "NewFloat64SumStore": ddbstate.NewFloat64SumStore,
			"NewInt64MaxStore": ddbstate.NewInt64MaxStore, "NewBytesStore": ddbstate.NewBytesStore, "NewDeduper": ddbstate.NewDeduper,
		},
		map[string]any{
			"WithClock": ddbstate.WithClock, "WithMaxRetries": ddbstate.WithMaxRetries, "WithBackoff": ddbstate.WithBackoff,
			"WithDedupTable": ddbstate.WithDedupTable, "WithDedupTTL": ddbstate.WithDedupTTL,
			"WithMeterProvider": ddbstate.WithMeterProvider, "WithLogger": ddbstate.WithLogger,
		},
		map[string][]string{
			"WithClock":         append(stores, "NewDeduper"),
			"WithMeterProvider": append(stores, "NewDeduper"), "WithLogger": append(stores, "NewDeduper"),
			"WithMaxRetries": stores, "WithBackoff": stores, "WithDedupTable": stores,
			"WithDedupTTL": append(stores, "NewDeduper"),
		})
}

// nilAPI is an API that is never called.
type nilAPI struct{ ddbstate.API }

func TestFloatRange(t *testing.T) {
	e := envFor(t)
	s, err := ddbstate.NewFloat64SumStore(testenv.DynamoDBClient(t), e.values)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []float64{1e125, -1e125, 1e-129, 123456789.123456789, -0.1, 5e-324 * 0} {
		k := state.Key{Entity: "f", Bucket: int64(i)}
		if err := s.MergeUpdate(t.Context(), k, d, 0); err != nil {
			t.Errorf("MergeUpdate(%g): %v", d, err)
			continue
		}
		if got, ok, err := s.Get(t.Context(), k); err != nil || !ok || got != d {
			t.Errorf("Get after MergeUpdate(%g) = %g, %v, %v", d, got, ok, err)
		}
	}
	for _, d := range []float64{1e126, 1e-131, math.NaN()} {
		if err := s.MergeUpdate(t.Context(), state.Key{Entity: "bad"}, d, 0); !errors.Is(err, state.ErrInvalidArgument) {
			t.Errorf("MergeUpdate(%g): err = %v, want ErrInvalidArgument", d, err)
		}
	}
}

// TestCorruptValues: an item whose v attribute has another type than the
// store's (written by hand) makes Get and GetMany fail with an error wrapping
// state.ErrCorrupt that names the item.
func TestCorruptValues(t *testing.T) {
	s := openStores(t)
	e := envFor(t)
	ctx := t.Context()
	c := testenv.DynamoDBClient(t)
	for _, tc := range []struct {
		name  string
		table string
		merge func(k state.Key) error
		get   func(k state.Key) []error
	}{
		{"int64_sum", e.values, func(k state.Key) error { return s.sum.MergeUpdate(ctx, k, 1, 0) }, func(k state.Key) []error {
			_, _, err1 := s.sum.Get(ctx, k)
			_, _, err2 := s.sum.GetMany(ctx, []state.Key{{Entity: "other"}, k})
			return []error{err1, err2}
		}},
		{"bytes", e.bytes, func(k state.Key) error { return s.bs.MergeUpdate(ctx, k, storetest.Counter{}.Of(1), 0) }, func(k state.Key) []error {
			_, _, err1 := s.bs.Get(ctx, k)
			_, _, err2 := s.bs.GetMany(ctx, []state.Key{k})
			return []error{err1, err2}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := state.Key{Entity: "corrupt-" + tc.name}
			if err := tc.merge(k); err != nil {
				t.Fatal(err)
			}
			out, err := c.Scan(ctx, &ddb.ScanInput{TableName: &tc.table})
			if err != nil {
				t.Fatal(err)
			}
			var item map[string]ddbtypes.AttributeValue
			for _, it := range out.Items {
				if pk, _ := it["pk"].(*ddbtypes.AttributeValueMemberS); pk != nil && strings.HasSuffix(pk.Value, "#"+k.Entity) {
					item = it
				}
			}
			if item == nil {
				t.Fatalf("no item of %s in %v", k.Entity, out.Items)
			}
			item["v"] = &ddbtypes.AttributeValueMemberS{Value: "written by hand"}
			if _, err := c.PutItem(ctx, &ddb.PutItemInput{TableName: &tc.table, Item: item}); err != nil {
				t.Fatal(err)
			}
			for i, err := range tc.get(k) {
				if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), k.Entity) {
					t.Errorf("%s of a corrupt item: %v, want an error wrapping state.ErrCorrupt naming %s",
						[]string{"Get", "GetMany"}[i], err, k.Entity)
				}
			}
		})
	}
}
