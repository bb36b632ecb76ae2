package memprovider

import (
	"context"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/internal/testkit/steadyload"
)

// size is how many records the data holds, expired ones included, and how long
// the queue of what expires is.
func (d *data) size() (records, queue int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	records = len(d.runs) + len(d.runLogs) + len(d.reruns) + len(d.replays) + len(d.markers) + len(d.markerLog)
	for _, l := range d.lateArrivals {
		records += len(l)
	}
	for _, l := range d.events {
		records += len(l.records)
	}
	return records, len(d.expiring) - d.head
}

// TestRetentionPlateau runs steadyload's workload for 60 simulated days with a
// 7-day retention of every kind and checks that the data holds as many records
// (and as long a queue) on day 60 as on day 14, within 5%: writes delete what
// expired, not only reads hide it.
func TestRetentionPlateau(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	week := 7 * 24 * time.Hour
	r := steadyload.Retention(week)
	r.Events, r.MarkerLog = week, week
	p, err := New(WithClock(clock.Now), WithRetention(r))
	if err != nil {
		t.Fatal(err)
	}
	type day struct{ records, queue int }
	var days []day
	measure := func(int) error {
		n, q := p.s.size()
		days = append(days, day{n, q})
		return nil
	}
	if err := (steadyload.Load{RunsPerDay: 100, Pipelines: 4, Days: 60}).Run(context.Background(), p, clock.Advance, measure); err != nil {
		t.Fatal(err)
	}
	week2, last := days[13], days[59]
	t.Logf("day 14 %+v, day 60 %+v", week2, last)
	if float64(last.records) > 1.05*float64(week2.records) || float64(last.queue) > 1.05*float64(week2.queue) {
		t.Errorf("the data grows after the first week: day 14 %+v, day 60 %+v", week2, last)
	}
}
