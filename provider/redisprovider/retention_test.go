package redisprovider_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/steadyload"
	"github.com/pipestate/pipestate/provider/redisprovider"
)

// growth is steadyload's workload on miniredis with a fake clock whose TTLs move
// with it, measuring the keys and bytes the server holds at the end of each day.
type growth struct {
	load      steadyload.Load
	retention time.Duration // 0: provider.Forever()
}

// day is what the server holds at the end of one simulated day.
type day struct{ keys, bytes int }

func (g growth) run(tb testing.TB) []day {
	tb.Helper()
	m := miniredis.RunT(tb)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	tb.Cleanup(func() { _ = c.Close() })
	clock := &fakeClock{}
	// Streams are kept by count: about one retention's worth of events per
	// pipeline and of marker writes in all (without retention, every one).
	var maxEvents, maxMarkers int64
	if g.retention > 0 {
		n := int64(g.load.RunsPerDay) * int64(g.retention/(24*time.Hour))
		maxEvents, maxMarkers = n/int64(g.load.Pipelines), n
	}
	p, err := redisprovider.New(c, redisprovider.WithClock(clock.now), redisprovider.WithRetention(steadyload.Retention(g.retention)),
		redisprovider.WithMaxEvents(maxEvents), redisprovider.WithMaxMarkerWrites(maxMarkers))
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]day, 0, g.load.Days)
	// miniredis's TTLs move an hour at a time (FastForward walks every key):
	// keys are deleted up to an hour after their server TTL, which only delays
	// the plateau.
	var behind time.Duration
	advance := func(d time.Duration) {
		clock.add(d)
		if behind += d; behind >= time.Hour {
			m.FastForward(behind)
			behind = 0
		}
	}
	measure := func(int) error {
		out = append(out, day{keys: len(m.Keys()), bytes: miniBytes(tb, m)})
		return nil
	}
	if err := g.load.Run(context.Background(), p, advance, measure); err != nil {
		tb.Fatal(err)
	}
	return out
}

// miniBytes is the size of what m holds: the bytes of every key, field, member
// and value (8 per sorted-set score), a stand-in for INFO memory, which
// miniredis lacks.
func miniBytes(tb testing.TB, m *miniredis.Miniredis) int {
	tb.Helper()
	n := 0
	for _, k := range m.Keys() {
		n += len(k)
		var err error
		switch m.Type(k) {
		case "string":
			var v string
			v, err = m.Get(k)
			n += len(v)
		case "hash":
			var fs []string
			fs, err = m.HKeys(k)
			for _, f := range fs {
				n += len(f) + len(m.HGet(k, f))
			}
		case "zset":
			var z map[string]float64
			z, err = m.SortedSet(k)
			for member := range z {
				n += len(member) + 8
			}
		case "list":
			var l []string
			l, err = m.List(k)
			for _, v := range l {
				n += len(v)
			}
		case "stream":
			var s []miniredis.StreamEntry
			s, err = m.Stream(k)
			for _, e := range s {
				n += len(e.ID)
				for _, v := range e.Values {
					n += len(v)
				}
			}
		}
		if err != nil {
			tb.Fatalf("size of %s: %v", k, err)
		}
	}
	return n
}

// TestRetentionPlateau runs the growth workload for 60 simulated days with a
// 7-day retention and checks that the server holds no more on day 60 than at the
// end of week 2, within 5% (a store that keeps expired records, or an index that
// keeps their entries, grows by about 4 times from day 14 to day 60 here); and
// that without retention it does grow (by half from day 14 to day 21), so the
// check can fail.
func TestRetentionPlateau(t *testing.T) {
	g := growth{load: steadyload.Load{RunsPerDay: 20, Pipelines: 4, Days: 60}, retention: 7 * 24 * time.Hour}
	if testing.Short() {
		g.load.RunsPerDay = 10
	}
	days := g.run(t)
	week2, last := days[13], days[len(days)-1]
	t.Logf("7-day retention: day 14 %d keys, %d bytes; day 60 %d keys, %d bytes", week2.keys, week2.bytes, last.keys, last.bytes)
	if float64(last.keys) > 1.05*float64(week2.keys) || float64(last.bytes) > 1.05*float64(week2.bytes) {
		t.Errorf("the store grows after the first week: day 14 %+v, day 60 %+v", week2, last)
	}
	g.retention, g.load.Days = 0, 21
	days = g.run(t)
	week2, last = days[13], days[len(days)-1]
	t.Logf("no retention: day 14 %d keys, %d bytes; day 21 %d keys, %d bytes", week2.keys, week2.bytes, last.keys, last.bytes)
	if last.keys < 4*week2.keys/3 {
		t.Errorf("without retention the store should keep growing: day 14 %+v, day 21 %+v", week2, last)
	}
}

// BenchmarkRetentionPlateau runs the growth workload at 1,000 runs a simulated day (over 10
// pipelines) for 60 days, with a 7-day retention and without, and reports what the server holds
// on day 14 and day 60 (keys, and MB of keys, fields and values).
//
//	go test -run '^$' -bench BenchmarkRetentionPlateau -benchtime 1x ./provider/redisprovider/
func BenchmarkRetentionPlateau(b *testing.B) {
	for _, c := range []struct {
		name      string
		retention time.Duration
	}{{"retention_7d", 7 * 24 * time.Hour}, {"no_retention", 0}} {
		b.Run(c.name, func(b *testing.B) {
			var days []day
			for range b.N {
				days = growth{load: steadyload.Load{RunsPerDay: 1000, Pipelines: 10, Days: 60}, retention: c.retention}.run(b)
			}
			week2, last := days[13], days[len(days)-1]
			b.ReportMetric(float64(week2.keys), "keys@day14")
			b.ReportMetric(float64(last.keys), "keys@day60")
			b.ReportMetric(float64(week2.bytes)/1e6, "MB@day14")
			b.ReportMetric(float64(last.bytes)/1e6, "MB@day60")
		})
	}
}
