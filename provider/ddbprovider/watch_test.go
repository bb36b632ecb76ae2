package ddbprovider_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// quiet is how long a sequence yields nothing after its first item before drain
// takes it as caught up; firstWait bounds the wait for that first item (a loaded
// DynamoDB Local can take seconds over the first Query), and every caller reads a
// log that holds something.
const quiet, firstWait = 500 * time.Millisecond, 10 * time.Second

// drain iterates the sequence that start returns until it yields nothing for
// firstWait, or for quiet after its first item (then cancels it), or ends, and
// returns what it yielded and the error it ended with (nil when drain cancelled
// it).
func drain[R any](t *testing.T, start func(ctx context.Context) iter.Seq2[R, error]) ([]R, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		r   R
		err error
	}
	ch := make(chan result)
	go func() {
		defer close(ch)
		for r, err := range start(ctx) {
			select {
			case ch <- result{r, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var out []R
	wait := firstWait
	for {
		select {
		case res, ok := <-ch:
			if !ok {
				return out, nil
			}
			if res.err != nil {
				if ctx.Err() != nil {
					return out, nil
				}
				return out, res.err
			}
			out = append(out, res.r)
			wait = quiet
		case <-time.After(wait):
			cancel()
			for range ch { // wait for the sequence to end
			}
			return out, nil
		}
	}
}

// watchAll returns every marker write the log holds after cursor.
func watchAll(t *testing.T, p *ddbprovider.Provider, cursor string) ([]types.CascadeMarkerRecord, error) {
	t.Helper()
	return drain(t, func(ctx context.Context) iter.Seq2[types.CascadeMarkerRecord, error] {
		return p.WatchCascadeMarkers(ctx, cursor)
	})
}

// wantLogged checks that the marker log holds exactly the writes of pipelineID
// with sources, in that order.
func wantLogged(t *testing.T, p *ddbprovider.Provider, pipelineID string, sources ...string) {
	t.Helper()
	recs, err := watchAll(t, p, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.Marker.PipelineID == pipelineID {
			got = append(got, r.Marker.Source)
		}
	}
	if !slices.Equal(got, sources) {
		t.Fatalf("marker log of %s: sources %q, want %q", pipelineID, got, sources)
	}
}

// TestMarkerLogRetention: a watch from a cursor whose next entries expired fails
// with ErrCursorExpired, after delivering what precedes the gap; a watch from ""
// starts at the oldest retained entry; WithMarkerLogRetention(0) keeps entries.
func TestMarkerLogRetention(t *testing.T) {
	e := testEnv(t)
	p := openOn(t, e.client, e, ddbprovider.WithMarkerLogRetention(time.Hour))
	ctx := t.Context()
	write := func(p *ddbprovider.Provider, date string) {
		t.Helper()
		if err := p.WriteCascadeMarker(ctx, "p", "", date, "up"); err != nil {
			t.Fatal(err)
		}
	}
	write(p, "2026-01-01")
	write(p, "2026-01-02")
	e.clock.Advance(30 * time.Minute)
	write(p, "2026-01-03")
	e.clock.Advance(40 * time.Minute) // the first two expired, the third has 20 minutes left
	forever := openOn(t, e.client, e, ddbprovider.WithMarkerLogRetention(0))
	write(forever, "2026-01-04")

	recs, err := watchAll(t, p, "")
	if err != nil || len(recs) != 2 || recs[0].Cursor != "3" || recs[1].Cursor != "4" {
		t.Fatalf("watch from the start: %+v, %v; want entries 3 and 4", recs, err)
	}
	for _, cursor := range []string{"1", "0", ""} {
		recs, err := watchAll(t, p, cursor)
		switch {
		case cursor == "1" && (!errors.Is(err, provider.ErrCursorExpired) || len(recs) != 0):
			t.Errorf("watch from cursor 1 (entry 2 expired): %+v, %v; want ErrCursorExpired at once", recs, err)
		case cursor != "1" && (err != nil || len(recs) != 2):
			t.Errorf("watch from %q: %+v, %v; want entries 3 and 4", cursor, recs, err)
		}
	}
	recs, err = watchAll(t, p, "2")
	if err != nil || len(recs) != 2 {
		t.Errorf("watch from cursor 2 (the entry after it retained): %+v, %v; want entries 3 and 4", recs, err)
	}

	e.clock.Advance(30 * time.Minute) // entry 3 expires, 4 never does
	write(p, "2026-01-05")
	recs, err = watchAll(t, p, "2")
	if !errors.Is(err, provider.ErrCursorExpired) || len(recs) != 0 {
		t.Errorf("watch from 2 after entry 3 expired: %+v, %v; want ErrCursorExpired", recs, err)
	}
	recs, err = watchAll(t, p, "")
	if err != nil || len(recs) != 2 || recs[0].Cursor != "4" || recs[1].Cursor != "5" {
		t.Errorf("watch from the start: %+v, %v; want entries 4 and 5", recs, err)
	}
}

// TestMarkerLogGapAfterDelivery: entries before a gap are delivered, then the
// watch fails with ErrCursorExpired; resuming from the last cursor fails at once.
func TestMarkerLogGapAfterDelivery(t *testing.T) {
	e := testEnv(t)
	short := openOn(t, e.client, e, ddbprovider.WithMarkerLogRetention(time.Minute))
	long := openOn(t, e.client, e, ddbprovider.WithMarkerLogRetention(time.Hour))
	ctx := t.Context()
	for i, p := range []*ddbprovider.Provider{long, short, long} { // entry 2 expires first
		if err := p.WriteCascadeMarker(ctx, "p", "", "2026-01-0"+strconv.Itoa(i+1), "up"); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(2 * time.Minute)
	recs, err := watchAll(t, long, "")
	if !errors.Is(err, provider.ErrCursorExpired) || len(recs) != 1 || recs[0].Cursor != "1" {
		t.Fatalf("watch over a gap: %+v, %v; want entry 1, then ErrCursorExpired", recs, err)
	}
	if recs, err := watchAll(t, long, "1"); !errors.Is(err, provider.ErrCursorExpired) || len(recs) != 0 {
		t.Fatalf("resumed watch: %+v, %v; want ErrCursorExpired", recs, err)
	}
}

// TestMarkerLogOrderAcrossInstances: concurrent writes of three instances get
// gapless numbers, each write once, and a watch that started before them sees
// them in number order.
func TestMarkerLogOrderAcrossInstances(t *testing.T) {
	e := testEnv(t)
	ps := []*ddbprovider.Provider{openOn(t, e.client, e), openOn(t, e.client, e), openOn(t, e.client, e)}
	const each = 8
	errs := make(chan error, len(ps))
	for i, p := range ps {
		go func() {
			for j := range each {
				if err := p.WriteCascadeMarker(t.Context(), "p"+strconv.Itoa(i), "", "2026-01-0"+strconv.Itoa(j+1), "up"); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range ps {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	recs, err := watchAll(t, ps[0], "")
	if err != nil || len(recs) != len(ps)*each {
		t.Fatalf("watch: %d records, %v; want %d", len(recs), err, len(ps)*each)
	}
	seen := map[string]bool{}
	for i, r := range recs {
		if r.Cursor != strconv.Itoa(i+1) {
			t.Fatalf("record %d has cursor %s", i, r.Cursor)
		}
		k := r.Marker.PipelineID + r.Marker.Date
		if seen[k] {
			t.Fatalf("write %s delivered twice", k)
		}
		seen[k] = true
	}
}
