package redisstate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/redisstate"
)

// faultyClient returns a client on b's server whose connections n dials, so that
// the test can drop the reply to one request after the server applied it.
func faultyClient(t *testing.T, b backend) (goredis.UniversalClient, *faults.Net) {
	t.Helper()
	n := faults.NewNet()
	var c goredis.UniversalClient
	switch b.name {
	case miniBackend.name:
		c = goredis.NewClient(&goredis.Options{Addr: miniFor(t).Addr(), Dialer: n.Dial})
	case realBackend.name:
		c = goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t), Dialer: n.Dial})
	default:
		c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: testenv.RedisClusterAddrs(t), Dialer: n.Dial})
	}
	if err := redisstate.LoadScripts(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	return closeWith(t, c), n
}

// lostReplyStores are the stores and the deduper of one lost-reply row.
type lostReplyStores struct {
	sum   *redisstate.Int64SumStore
	fsum  *redisstate.Float64SumStore
	max   *redisstate.Int64MaxStore
	bytes *redisstate.BytesStore
	dedup *redisstate.Deduper
	// client and prefix are the stores'
	client goredis.UniversalClient
	prefix string
}

// lostReplyRow is one write method: do arms the fault with arm (the parts of the
// request whose reply is lost), performs the write once, and asserts the documented
// outcome after the client library's retry.
type lostReplyRow struct {
	method string
	do     func(t *testing.T, s lostReplyStores, arm func(parts ...string))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantGet fails t unless get returns want, found.
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
// reply was lost, false for a redelivery, the delta in the value exactly once.
func onceRow[V comparable](method string, store func(lostReplyStores) state.OnceStore[V], delta, want V) lostReplyRow {
	return lostReplyRow{method, func(t *testing.T, s lostReplyStores, arm func(...string)) {
		st, k := store(s), state.Key{Entity: "lost-" + method}
		arm("evalsha", "lost-"+method)
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

// mergeRow is the row of a MergeUpdate whose value after one merge of delta onto
// the missing key must be one of want.
func mergeRow[V comparable](method string, store func(lostReplyStores) state.Store[V], delta V, want ...V) lostReplyRow {
	return lostReplyRow{method, func(t *testing.T, s lostReplyStores, arm func(...string)) {
		st, k := store(s), state.Key{Entity: "lost-" + method}
		arm("evalsha", "lost-"+method)
		must(t, st.MergeUpdate(t.Context(), k, delta, time.Hour))
		wantGet(t, st.Get, k, want...)
	}}
}

var (
	sumOf   = func(s lostReplyStores) *redisstate.Int64SumStore { return s.sum }
	c5, c10 = string(storetest.Counter{}.Of(5)), string(storetest.Counter{}.Of(10))
)

// lostReplyRows lists every write method of the stores and the deduper with its
// documented outcome under a lost reply: exactly once for Max, Bytes, Once merges
// and the deduper; at least once (the delta once or twice) for a plain sum.
var lostReplyRows = []lostReplyRow{
	mergeRow("Int64SumStore.MergeUpdate", func(s lostReplyStores) state.Store[int64] { return sumOf(s) }, 5, 5, 10),
	mergeRow("Float64SumStore.MergeUpdate", func(s lostReplyStores) state.Store[float64] { return s.fsum }, 0.5, 0.5, 1),
	mergeRow("Int64MaxStore.MergeUpdate", func(s lostReplyStores) state.Store[int64] { return s.max }, 5, 5),
	{"BytesStore.MergeUpdate", func(t *testing.T, s lostReplyStores, arm func(...string)) {
		k := state.Key{Entity: "lost-bytes"}
		arm("evalsha", "lost-bytes")
		must(t, s.bytes.MergeUpdate(t.Context(), k, storetest.Counter{}.Of(5), time.Hour))
		got, _, err := s.bytes.Get(t.Context(), k)
		if err != nil || string(got) != c5 {
			t.Fatalf("Get = %v, %v; want Counter(5) (Counter(10) is the delta applied twice: %v)", got, err, string(got) == c10)
		}
	}},
	onceRow("Int64SumStore.MergeUpdateOnce", func(s lostReplyStores) state.OnceStore[int64] { return s.sum }, 5, 5),
	onceRow("Float64SumStore.MergeUpdateOnce", func(s lostReplyStores) state.OnceStore[float64] { return s.fsum }, 0.5, 0.5),
	onceRow("Int64MaxStore.MergeUpdateOnce", func(s lostReplyStores) state.OnceStore[int64] { return s.max }, 5, 5),
	{"BytesStore.MergeUpdateOnce", func(t *testing.T, s lostReplyStores, arm func(...string)) {
		k := state.Key{Entity: "lost-bytes-once"}
		arm("evalsha", "lost-bytes-once")
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
	{"Deduper.MarkSeen", func(t *testing.T, s lostReplyStores, arm func(...string)) {
		arm("evalsha", "lost-seen")
		if first, err := s.dedup.MarkSeen(t.Context(), "lost-seen"); err != nil || !first {
			t.Fatalf("MarkSeen = %v, %v; want first", first, err)
		}
		if first, err := s.dedup.MarkSeen(t.Context(), "lost-seen"); err != nil || first {
			t.Fatalf("second MarkSeen = %v, %v; want not first", first, err)
		}
	}},
	{"Deduper.Release", func(t *testing.T, s lostReplyStores, arm func(...string)) {
		if first, err := s.dedup.MarkSeen(t.Context(), "lost-release"); err != nil || !first {
			t.Fatalf("MarkSeen = %v, %v; want first", first, err)
		}
		arm("del", "lost-release")
		must(t, s.dedup.Release(t.Context(), "lost-release"))
		if first, err := s.dedup.MarkSeen(t.Context(), "lost-release"); err != nil || !first {
			t.Fatalf("MarkSeen after Release = %v, %v; want first", first, err)
		}
	}},
}

// TestLostReply drops the reply to every write method after the server applied it,
// so that go-redis retries, and checks the documented outcome.
func TestLostReply(t *testing.T) {
	var names []string
	for _, r := range lostReplyRows {
		names = append(names, r.method)
	}
	storetest.CoverWriteMethods(t, names, &redisstate.Int64SumStore{}, &redisstate.Float64SumStore{}, &redisstate.Int64MaxStore{}, &redisstate.BytesStore{}, &redisstate.Deduper{})
	runLostReplyRows(t, lostReplyRows)
}

// runLostReplyRows runs rows on every backend, each on stores of its own whose
// client drops the reply its row arms.
func runLostReplyRows(t *testing.T, rows []lostReplyRow) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, r := range rows {
			t.Run(r.method, func(t *testing.T) {
				c, n := faultyClient(t, b)
				p := prefixFor(t)
				var s lostReplyStores
				var errs [5]error
				s.sum, errs[0] = redisstate.NewInt64SumStore(c, p)
				s.fsum, errs[1] = redisstate.NewFloat64SumStore(c, p)
				s.max, errs[2] = redisstate.NewInt64MaxStore(c, p)
				s.bytes, errs[3] = redisstate.NewBytesStore(c, p, storetest.Counter{})
				s.dedup, errs[4] = redisstate.NewDeduper(c, p)
				s.client, s.prefix = c, p
				must(t, errors.Join(errs[:]...))
				r.do(t, s, func(parts ...string) { n.DropReply(faults.Contains(parts...)) })
				if got := n.Dropped(); got != 1 {
					t.Fatalf("%d replies dropped, want 1: the fault did not fire", got)
				}
			})
		}
	})
}
