package main

import (
	"bytes"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/pipestate/pipestate/internal/testkit/testenv"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
)

// truth is what the demo stream should count to, computed in memory from the
// deliveries: each click ID counted once.
type truth struct {
	deliveries, clicks int
	views, lastHour    map[string]int64    // by page
	visitors           map[string][]string // by "15:04-15:04" range: distinct users
}

func groundTruth(t *testing.T) truth {
	t.Helper()
	tr := truth{views: map[string]int64{}, lastHour: map[string]int64{}, visitors: map[string][]string{}}
	lastHour := demo.End().Add(-time.Hour)
	ranges := map[string][2]time.Time{
		label(demo.Start, lastHour):   {demo.Start, lastHour},
		label(lastHour, demo.End()):   {lastHour, demo.End()},
		label(demo.Start, demo.End()): {demo.Start, demo.End()},
	}
	users := map[string]map[string]bool{}
	seen := map[string]click{}
	ds := demo.deliveries()
	tr.deliveries = len(ds)
	for _, c := range ds {
		if prev, ok := seen[c.ID]; ok {
			if prev != c {
				t.Fatalf("redelivery of %s differs: %+v vs %+v", c.ID, prev, c)
			}
			continue
		}
		seen[c.ID] = c
		tr.clicks++
		tr.views[c.Page]++
		if !c.At.Before(lastHour) {
			tr.lastHour[c.Page]++
		}
		for l, r := range ranges {
			if !c.At.Before(r[0]) && c.At.Before(r[1]) {
				if users[l] == nil {
					users[l] = map[string]bool{}
				}
				if !users[l][c.User] {
					users[l][c.User] = true
					tr.visitors[l] = append(tr.visitors[l], c.User)
				}
			}
		}
	}
	return tr
}

func label(from, to time.Time) string { return from.Format("15:04") + "-" + to.Format("15:04") }

// printed is what one run printed, parsed.
type printed struct {
	deliveries, applied, skipped int
	deltas, writes               int
	views, lastHour              map[string]int64
	visitors                     map[string]uint64
	table                        string // the views table and visitor lines, verbatim
}

var (
	reApplied  = regexp.MustCompile(`^(\d+) deliveries: (\d+) views applied, (\d+) redeliveries skipped$`)
	reDeltas   = regexp.MustCompile(`^(\d+) visitor sketch deltas coalesced into (\d+) store writes$`)
	reRow      = regexp.MustCompile(`^(\S+)\s+(\d+)\s+(\d+)$`)
	reVisitors = regexp.MustCompile(`^unique visitors (\d\d:\d\d-\d\d:\d\d): ~(\d+)$`)
)

func parse(t *testing.T, out string) printed {
	t.Helper()
	p := printed{views: map[string]int64{}, lastHour: map[string]int64{}, visitors: map[string]uint64{}}
	atoi := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("number %q: %v", s, err)
		}
		return n
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, line := range lines {
		if m := reApplied.FindStringSubmatch(line); m != nil {
			p.deliveries, p.applied, p.skipped = atoi(m[1]), atoi(m[2]), atoi(m[3])
		} else if m := reDeltas.FindStringSubmatch(line); m != nil {
			p.deltas, p.writes = atoi(m[1]), atoi(m[2])
		} else if m := reRow.FindStringSubmatch(line); m != nil {
			p.views[m[1]], p.lastHour[m[1]] = int64(atoi(m[2])), int64(atoi(m[3]))
		} else if m := reVisitors.FindStringSubmatch(line); m != nil {
			p.visitors[m[1]] = uint64(atoi(m[2]))
		} else if !strings.HasPrefix(line, "page ") {
			t.Fatalf("unexpected line %d %q in:\n%s", i, line, out)
		}
		if i >= 2 {
			p.table += line + "\n"
		}
	}
	return p
}

// hllTolerance is the error allowed on an estimate of n distinct items: three
// standard errors of the sketch (1.04/sqrt(2^p), the documented ~0.8% at the
// default precision), rounded up.
func hllTolerance(n int) float64 {
	se := 1.04 / math.Sqrt(float64(uint64(1)<<hll.DefaultPrecision))
	return math.Ceil(3 * se * float64(n))
}

// check compares one run's output with the ground truth.
func check(t *testing.T, tr truth, p printed) {
	t.Helper()
	if p.deliveries != tr.deliveries || p.applied+p.skipped != tr.deliveries {
		t.Errorf("deliveries %d (applied %d + skipped %d), want %d", p.deliveries, p.applied, p.skipped, tr.deliveries)
	}
	var all, last int64
	for _, page := range demo.Pages {
		if p.views[page] != tr.views[page] || p.lastHour[page] != tr.lastHour[page] {
			t.Errorf("page %s: views %d, last hour %d; want %d, %d", page, p.views[page], p.lastHour[page], tr.views[page], tr.lastHour[page])
		}
		all, last = all+tr.views[page], last+tr.lastHour[page]
	}
	if p.views["all"] != all || p.lastHour["all"] != last || all != int64(tr.clicks) {
		t.Errorf("all pages: views %d, last hour %d; want %d (= %d clicks), %d", p.views["all"], p.lastHour["all"], all, tr.clicks, last)
	}
	if len(p.views) != len(demo.Pages)+1 {
		t.Errorf("table has %d rows, want %d pages + all", len(p.views), len(demo.Pages))
	}
	if len(p.visitors) != len(tr.visitors) {
		t.Errorf("visitor lines %v, want ranges of %v", p.visitors, tr.visitors)
	}
	for _, l := range slices.Sorted(maps.Keys(tr.visitors)) {
		got, exact := p.visitors[l], len(tr.visitors[l])
		if diff := math.Abs(float64(got) - float64(exact)); diff > hllTolerance(exact) {
			t.Errorf("unique visitors %s: ~%d, exact %d: off by %.0f, more than %.0f", l, got, exact, diff, hllTolerance(exact))
		} else {
			t.Logf("unique visitors %s: ~%d, exact %d (tolerance ±%.0f)", l, got, exact, hllTolerance(exact))
		}
	}
	// Sketch deltas go through the coalescer: one write per hour per batch.
	if p.deltas != tr.deliveries || p.writes < 2 || p.writes > 2*(tr.deliveries+batchSize-1)/batchSize {
		t.Errorf("%d sketch deltas in %d writes; want %d deltas in 2..%d writes", p.deltas, p.writes, tr.deliveries, 2*(tr.deliveries+batchSize-1)/batchSize)
	}
}

// backends are the servers the tests run on: a miniredis per test, the real Redis
// in REDIS_ADDR and DynamoDB Local at DYNAMODB_ENDPOINT (`make test` sets them).
// Without them the real-server cases are skipped, or fail under
// PIPESTATE_REQUIRE_SERVERS=1.
type backend struct {
	name string
	cfg  func(t *testing.T) exbackend.Config
}

var backends = []backend{
	{"miniredis", func(t *testing.T) exbackend.Config {
		return exbackend.Config{Redis: miniredis.RunT(t).Addr(), Prefix: "counters"}
	}},
	{"redis", func(t *testing.T) exbackend.Config {
		return exbackend.Config{Redis: testenv.RedisAddr(t), Prefix: testenv.RedisPrefix(t)}
	}},
	{"dynamodb", func(t *testing.T) exbackend.Config {
		// DynamoDB Local on a loaded machine can take seconds a call (creating tables).
		return exbackend.Config{DynamoDB: testenv.DynamoDBEndpoint(t), Prefix: testenv.DynamoDBPrefix(t), Timeout: time.Minute}
	}},
}

func TestCountsAreExact(t *testing.T) {
	tr := groundTruth(t)
	if want := int(float64(demo.Clicks)*(1+demo.Redeliver) + 0.5); tr.clicks != demo.Clicks || tr.deliveries != want {
		t.Fatalf("stream has %d clicks in %d deliveries, want %d in %d", tr.clicks, tr.deliveries, demo.Clicks, want)
	}
	// "embedded" is main's default path (no -redis flag: its own miniredis); the
	// rerun test covers a miniredis given by address.
	embedded := backend{"embedded", func(*testing.T) exbackend.Config { return exbackend.Config{Prefix: "counters"} }}
	for _, b := range []backend{embedded, backends[1], backends[2]} {
		t.Run(b.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := connectAndRun(&out, b.cfg(t)); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			p := parse(t, out.String())
			check(t, tr, p)
			if p.applied != tr.clicks || p.skipped != tr.deliveries-tr.clicks {
				t.Errorf("applied %d, skipped %d; want %d, %d", p.applied, p.skipped, tr.clicks, tr.deliveries-tr.clicks)
			}
		})
	}
}

// TestRerunDoesNotDouble runs the example twice on one server, as a consumer that
// restarts and gets the whole stream redelivered: the second run applies nothing and
// prints the same totals.
func TestRerunDoesNotDouble(t *testing.T) {
	tr := groundTruth(t)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			cfg := b.cfg(t)
			var runs [2]printed
			for i := range runs {
				var out bytes.Buffer
				if err := connectAndRun(&out, cfg); err != nil {
					t.Fatalf("run %d: %v\n%s", i+1, err, out.String())
				}
				runs[i] = parse(t, out.String())
				check(t, tr, runs[i])
			}
			if runs[1].applied != 0 || runs[1].skipped != tr.deliveries {
				t.Errorf("second run applied %d, skipped %d; want 0, %d", runs[1].applied, runs[1].skipped, tr.deliveries)
			}
			if runs[0].table != runs[1].table {
				t.Errorf("totals changed on the rerun:\n%s\nthen:\n%s", runs[0].table, runs[1].table)
			}
		})
	}
}

// TestMain fails the package when its tests leave tables or keys behind.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestDeadServer: on a Redis that accepts connections and never answers, the
// example fails within its timeout instead of hanging (4s of slack for a loaded
// machine; without a timeout it took 5s, go-redis's default dial timeout).
func TestDeadServer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	start := time.Now()
	err := connectAndRun(&bytes.Buffer{}, exbackend.Config{Redis: testenv.BlackHole(t), Prefix: "counters", Timeout: timeout})
	if took := time.Since(start); err == nil || took > timeout+4*time.Second {
		t.Errorf("took %v, error %v; want an error within %v", took, err, timeout+4*time.Second)
	}
}
