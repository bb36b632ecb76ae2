package providertest

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// The clock probes read the providers' clock, when Harness.Now is nil, through a
// write of the group's own store that the backend fills from its clock. Each writes
// under an ID of its own (probeID), so it never shows in the test's lists.

func probeRuns(t *testing.T, p provider.Provider) time.Time {
	t.Helper()
	id := probeID(t)
	noErr(t, p.PutRunState(t.Context(), types.RunState{RunID: id, PipelineID: id, Status: types.RunPending}), "probe clock: PutRunState")
	got, err := p.GetRunState(t.Context(), id)
	return mustGet(t, got, err, "probe clock: GetRunState").CreatedAt
}

func probeTraits(t *testing.T, p provider.Provider) time.Time {
	t.Helper()
	id := probeID(t)
	noErr(t, p.PutTrait(t.Context(), id, newTrait("probe"), longTTL), "probe clock: PutTrait")
	got, err := p.GetTrait(t.Context(), id, "probe")
	g := mustGet(t, got, err, "probe clock: GetTrait")
	if g.ExpiresAt == nil {
		t.Fatal("probe clock: PutTrait with a ttl set no ExpiresAt")
	}
	return g.ExpiresAt.Add(-longTTL)
}

func probeEvents(t *testing.T, p provider.Provider) time.Time {
	t.Helper()
	id := probeID(t)
	noErr(t, p.AppendEvent(t.Context(), types.Event{Kind: "PROBE", PipelineID: id}), "probe clock: AppendEvent")
	list, err := p.ListEvents(t.Context(), id, 1)
	wantLen(t, list, err, 1, "probe clock: ListEvents")
	return list[0].Timestamp
}

func probeReruns(t *testing.T, p provider.Provider) time.Time {
	t.Helper()
	id := probeID(t)
	noErr(t, p.PutRerun(t.Context(), types.RerunRecord{RerunID: id, PipelineID: id, OriginalDate: "probe", Status: types.RequestPending}), "probe clock: PutRerun")
	got, err := p.GetRerun(t.Context(), id)
	return mustGet(t, got, err, "probe clock: GetRerun").RequestedAt
}

func probeReplays(t *testing.T, p provider.Provider) time.Time {
	t.Helper()
	id := probeID(t)
	noErr(t, p.PutReplay(t.Context(), types.ReplayRequest{PipelineID: id, Date: "probe", Status: types.RequestPending}), "probe clock: PutReplay")
	got, err := p.GetReplay(t.Context(), id, "probe", "")
	return mustGet(t, got, err, "probe clock: GetReplay").CreatedAt
}

func probeLateArrivals(t *testing.T, p provider.Provider) time.Time {
	t.Helper()
	id := probeID(t)
	noErr(t, p.PutLateArrival(t.Context(), types.LateArrival{PipelineID: id, Date: "probe"}), "probe clock: PutLateArrival")
	list, err := p.ListLateArrivals(t.Context(), id, "probe", "")
	wantLen(t, list, err, 1, "probe clock: ListLateArrivals")
	return list[0].DetectedAt
}

func probeMarkers(t *testing.T, p provider.Provider) time.Time {
	t.Helper()
	id := probeID(t)
	noErr(t, p.WriteCascadeMarker(t.Context(), id, "", "probe", "probe"), "probe clock: WriteCascadeMarker")
	list, err := p.(provider.CascadeReader).ListCascadeMarkers(t.Context(), id, 1)
	wantLen(t, list, err, 1, "probe clock: ListCascadeMarkers")
	return list[0].WrittenAt
}

func probeLeases(t *testing.T, p provider.Provider) time.Time {
	t.Helper()
	lease, err := p.(provider.Leaser).AcquireLease(t.Context(), probeID(t), longTTL)
	return mustGet(t, lease, err, "probe clock: AcquireLease").ExpiresAt.Add(-longTTL)
}
