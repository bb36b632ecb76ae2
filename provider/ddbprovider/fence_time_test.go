package ddbprovider_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/providertest"
	"github.com/pipestate/pipestate/types"
)

// TestLateGuardOutlivesList is issue 35's breach 1 on DynamoDB: a late
// arrivals list's fence item (its guard) must live as long as the list, whatever
// write extended the list last. A late arrival written under fence 2 by an
// instance keeping them 1 h, then another 30 min later (unfenced, by an instance
// keeping them 1 h or 3 h; or fenced 2 by one keeping them 3 h), then DynamoDB's
// TTL deletes what expired 45 (90) min after that (sweepTTL): the list is live, so
// fence 1 is refused. Before the fix the guard kept the expiry of the fenced
// record it was written with, was deleted first, and fence 1 was accepted.
// Also: a later write with a shorter retention never shortens the guard.
func TestLateGuardOutlivesList(t *testing.T) {
	keep := func(d time.Duration) ddbprovider.Option {
		r := provider.DefaultRetention()
		r.LateArrivals = d
		return ddbprovider.WithRetention(r)
	}
	for _, c := range []struct {
		name    string
		keep    time.Duration
		fenced  bool
		shorter bool          // then one more fenced write by the 1 h instance
		wait    time.Duration // after the second write: past the first's ttl
	}{
		{"unfenced", time.Hour, false, false, 45 * time.Minute},
		{"unfenced_longer_retention", 3 * time.Hour, false, false, 90 * time.Minute},
		{"fenced_longer_retention", 3 * time.Hour, true, false, 90 * time.Minute},
		{"fenced_longer_then_shorter", 3 * time.Hour, true, true, 90 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			e := testEnv(t)
			short := openOn(t, e.client, e, keep(time.Hour))
			again := openOn(t, e.client, e, keep(c.keep))
			fp := func(p provider.Provider, f int64) provider.Provider {
				fp, err := provider.Fenced(p, types.Lease{Key: "job", Token: "t", Fence: f})
				mustNil(t, err)
				return fp
			}
			late := func(p provider.Provider, n int64) error {
				return p.PutLateArrival(ctx, types.LateArrival{PipelineID: "lg", Date: "2026-01-02", RecordDelta: n})
			}
			mustNil(t, late(fp(short, 2), 1))
			e.clock.Advance(30 * time.Minute)
			var p provider.Provider = again
			if c.fenced {
				p = fp(again, 2)
			}
			mustNil(t, late(p, 2))
			if c.shorter {
				mustNil(t, late(fp(short, 2), 3))
			}
			e.clock.Advance(c.wait)
			sweepTTL(t, e) // what expired is gone, as DynamoDB's TTL deletes it
			before, err := short.ListLateArrivals(ctx, "lg", "2026-01-02", "")
			mustNil(t, err)
			if len(before) == 0 {
				t.Fatal("the list is empty: the test needs it live")
			}
			if err := late(fp(short, 1), 9); !errors.Is(err, provider.ErrFenced) {
				t.Errorf("fence 1 on a live list fence 2 wrote: %v, want ErrFenced", err)
			}
			after, err := short.ListLateArrivals(ctx, "lg", "2026-01-02", "")
			mustNil(t, err)
			if len(after) != len(before) {
				t.Errorf("the refused write changed the list from %d to %d records", len(before), len(after))
			}
		})
	}
}

// TestFencingWithTTLDeletion runs the suite's Fencing group on providers whose
// Sleep also deletes what DynamoDB's TTL would have deleted by then (sweepTTL),
// which DynamoDB Local never does: the group's tests with time then meet the
// items as a real table holds them (PutLateArrival's failed before the guard
// item lived as long as its list).
func TestFencingWithTTLDeletion(t *testing.T) {
	testEnv(t)
	h := conformanceHarness()
	h.Sleep = func(t *testing.T, d time.Duration) {
		e := testEnv(t)
		e.clock.Advance(d)
		sweepTTL(t, e)
	}
	providertest.RunFencing(t, h)
}
