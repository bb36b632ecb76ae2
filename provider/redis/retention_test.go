package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redis"
	"github.com/pipestate/pipestate/types"
)

// growth is a steady workload on a fake clock: every simulated day, runsPerDay
// runs spread evenly over the day and over pipelines, each created, swapped
// twice (running, completed), logged (run log, event, cascade marker), and every
// tenth also rerun, replayed and given a late arrival; miniredis's TTLs move with
// the clock. It measures the keys and bytes the server holds at the end of each
// day.
type growth struct {
	runsPerDay, pipelines, days int
	retention                   time.Duration // 0: provider.Forever()
}

// day is what the server holds at the end of one simulated day.
type day struct{ keys, bytes int }

func (g growth) run(tb testing.TB) []day {
	tb.Helper()
	m := miniredis.RunT(tb)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	tb.Cleanup(func() { _ = c.Close() })
	clock := &fakeClock{}
	r := provider.Forever()
	if g.retention > 0 {
		r = provider.Retention{Runs: g.retention, RunLogs: g.retention, Reruns: g.retention, Replays: g.retention,
			LateArrivals: g.retention, CascadeMarkers: g.retention}
	}
	// Streams are kept by count: about one retention's worth of events per
	// pipeline and of marker writes in all (without retention, every one).
	var maxEvents, maxMarkers int64
	if g.retention > 0 {
		week := int64(g.runsPerDay) * int64(g.retention/(24*time.Hour))
		maxEvents, maxMarkers = week/int64(g.pipelines), week
	}
	p, err := redis.New(c, redis.WithClock(clock.now), redis.WithRetention(r),
		redis.WithMaxEvents(maxEvents), redis.WithMaxMarkerWrites(maxMarkers))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	step := 24 * time.Hour / time.Duration(g.runsPerDay)
	out := make([]day, 0, g.days)
	for d := range g.days {
		date := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d).Format(time.DateOnly)
		for i := range g.runsPerDay {
			if err := g.one(ctx, p, d, i, date); err != nil {
				tb.Fatalf("day %d run %d: %v", d, i, err)
			}
			clock.add(step)
			m.FastForward(step)
		}
		out = append(out, day{keys: len(m.Keys()), bytes: miniBytes(tb, m)})
	}
	return out
}

// one is the writes of run i of day d.
func (g growth) one(ctx context.Context, p *redis.Provider, d, i int, date string) error {
	pipe := fmt.Sprintf("pipe-%d", i%g.pipelines)
	id := fmt.Sprintf("r-%d-%d", d, i)
	schedule := fmt.Sprintf("s%d", i)
	run := types.RunState{RunID: id, PipelineID: pipe, Status: types.RunPending}
	if _, err := p.CreateRunState(ctx, run); err != nil {
		return err
	}
	for v, s := range []types.RunStatus{types.RunRunning, types.RunCompleted} {
		run.Status = s
		if _, err := p.CompareAndSwapRunState(ctx, id, v, run); err != nil {
			return err
		}
	}
	if err := p.PutRunLog(ctx, types.RunLogEntry{PipelineID: pipe, Date: date, ScheduleID: schedule, Status: types.RunCompleted,
		AttemptNumber: 1, RunID: id}); err != nil {
		return err
	}
	if err := p.AppendEvent(ctx, types.Event{Kind: "RUN_COMPLETED", PipelineID: pipe, RunID: id}); err != nil {
		return err
	}
	if err := p.WriteCascadeMarker(ctx, pipe, schedule, date, "upstream"); err != nil {
		return err
	}
	if i%10 != 0 {
		return nil
	}
	if err := p.PutRerun(ctx, types.RerunRecord{RerunID: "re-" + id, PipelineID: pipe, OriginalDate: date, Reason: "late data",
		Status: types.RequestPending}); err != nil {
		return err
	}
	if err := p.PutReplay(ctx, types.ReplayRequest{PipelineID: pipe, Date: date, ScheduleID: schedule, Reason: "late data",
		Status: types.RequestPending}); err != nil {
		return err
	}
	return p.PutLateArrival(ctx, types.LateArrival{PipelineID: pipe, Date: date, ScheduleID: schedule, RecordDelta: 5,
		TraitType: "volume"})
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
// keeps their entries, grows by about 4/3 from day 14 to day 60 here); and that
// without retention it does grow, so the check can fail.
func TestRetentionPlateau(t *testing.T) {
	g := growth{runsPerDay: 50, pipelines: 4, days: 60, retention: 7 * 24 * time.Hour}
	if testing.Short() {
		g.runsPerDay = 20
	}
	days := g.run(t)
	week2, last := days[13], days[len(days)-1]
	t.Logf("7-day retention: day 14 %d keys, %d bytes; day 60 %d keys, %d bytes", week2.keys, week2.bytes, last.keys, last.bytes)
	if float64(last.keys) > 1.05*float64(week2.keys) || float64(last.bytes) > 1.05*float64(week2.bytes) {
		t.Errorf("the store grows after the first week: day 14 %+v, day 60 %+v", week2, last)
	}
	g.retention, g.days = 0, 28
	days = g.run(t)
	week2, last = days[13], days[len(days)-1]
	t.Logf("no retention: day 14 %d keys, %d bytes; day 28 %d keys, %d bytes", week2.keys, week2.bytes, last.keys, last.bytes)
	if last.keys < 3*week2.keys/2 {
		t.Errorf("without retention the store should keep growing: day 14 %+v, day 28 %+v", week2, last)
	}
}

// BenchmarkRetentionPlateau runs the growth workload at 2,000 runs a simulated day for 60
// days, with a 7-day retention and without, and reports what the server holds
// on day 14 and day 60 (keys, and MB of keys, fields and values).
//
//	go test -run '^$' -bench BenchmarkRetentionPlateau -benchtime 1x ./provider/redis/
func BenchmarkRetentionPlateau(b *testing.B) {
	for _, c := range []struct {
		name      string
		retention time.Duration
	}{{"retention_7d", 7 * 24 * time.Hour}, {"no_retention", 0}} {
		b.Run(c.name, func(b *testing.B) {
			var days []day
			for range b.N {
				days = growth{runsPerDay: 2000, pipelines: 20, days: 60, retention: c.retention}.run(b)
			}
			week2, last := days[13], days[len(days)-1]
			b.ReportMetric(float64(week2.keys), "keys@day14")
			b.ReportMetric(float64(last.keys), "keys@day60")
			b.ReportMetric(float64(week2.bytes)/1e6, "MB@day14")
			b.ReportMetric(float64(last.bytes)/1e6, "MB@day60")
		})
	}
}
