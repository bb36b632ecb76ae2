package providertest

import (
	"context"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunLifecycle tests Start, Stop and Ping: Ping answers, Start and Stop are
// idempotent, every method (Start and those of the optional interfaces included)
// returns ErrClosed after Stop, and stopping one instance leaves another working.
func RunLifecycle(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Lifecycle", h, func(t *testing.T, s *suite) {
		s.run(t, "ping", testLifecyclePing)
		s.run(t, "start_idempotent", testLifecycleStartIdempotent)
		s.run(t, "stop_idempotent", testLifecycleStopIdempotent)
		s.run(t, "stop_leaves_other_instances", testLifecycleStopLeavesOtherInstances)
		s.run(t, "stop_keeps_data", testLifecycleStopKeepsData)
		testLifecycleCancelled(t, s)
		t.Run("after_stop", func(t *testing.T) {
			t.Parallel()
			p, k := s.open(t), newIDs(t)
			noErr(t, p.Stop(t.Context()), "Stop")
			_, leaser := p.(provider.Leaser)
			_, reader := p.(provider.CascadeReader)
			for _, c := range everyCall() {
				t.Run(c.name, func(t *testing.T) {
					switch {
					case c.leaser && !leaser:
						t.Skip("the provider does not implement provider.Leaser")
					case c.reader && !reader:
						t.Skip("the provider does not implement provider.CascadeReader")
					}
					wantErr(t, c.do(t.Context(), p, k), provider.ErrClosed, c.name+" after Stop")
				})
			}
		})
	})
}

// testLifecycleCancelled runs the cancelled-context subtest of the Lifecycle group.
func testLifecycleCancelled(t *testing.T, s *suite) {
	s.checkCancelled(t, []call{
		{"Ping", func(ctx context.Context, p provider.Provider, k ids) error { return p.Ping(ctx) }},
		{"Start", func(ctx context.Context, p provider.Provider, k ids) error { return p.Start(ctx) }},
	}, nil, nil)
}

func testLifecyclePing(t *testing.T, s *suite) {
	noErr(t, s.open(t).Ping(t.Context()), "Ping")
}

func testLifecycleStartIdempotent(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.Start(t.Context()), "Start of a started provider")
	noErr(t, p.Start(t.Context()), "Start again")
	noErr(t, p.RegisterPipeline(t.Context(), newPipeline(k.pipeline)), "RegisterPipeline after Start")
	noErr(t, p.Ping(t.Context()), "Ping after Start")
}

func testLifecycleStopIdempotent(t *testing.T, s *suite) {
	p := s.open(t)
	noErr(t, p.Stop(t.Context()), "Stop")
	noErr(t, p.Stop(t.Context()), "Stop again")
}

func testLifecycleStopLeavesOtherInstances(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	noErr(t, p.RegisterPipeline(t.Context(), newPipeline(k.pipeline)), "RegisterPipeline")
	noErr(t, p.Stop(t.Context()), "Stop")
	got, err := q.GetPipeline(t.Context(), k.pipeline)
	mustGet(t, got, err, "GetPipeline on another instance after Stop")
	noErr(t, q.Ping(t.Context()), "Ping on another instance after Stop")
}

func testLifecycleStopKeepsData(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run, at(0))), "PutRunState")
	noErr(t, p.Stop(t.Context()), "Stop")
	got, err := s.open(t).GetRunState(t.Context(), k.run)
	mustGet(t, got, err, "GetRunState on a new instance after Stop")
}

// methodCall is a call of one method with valid arguments; leaser and reader mark
// the methods of the optional interfaces.
type methodCall struct {
	call
	leaser, reader bool
}

// everyCall returns one call of every method but Stop.
func everyCall() []methodCall {
	lease := func(k ids) types.Lease { return types.Lease{Key: k.lock, Token: "token", Fence: 1, ExpiresAt: at(0)} }
	plain := func(name string, do func(ctx context.Context, p provider.Provider, k ids) error) methodCall {
		return methodCall{call: call{name, do}}
	}
	calls := []methodCall{
		plain("Start", func(ctx context.Context, p provider.Provider, k ids) error { return p.Start(ctx) }),
		plain("Ping", func(ctx context.Context, p provider.Provider, k ids) error { return p.Ping(ctx) }),
		plain("RegisterPipeline", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.RegisterPipeline(ctx, newPipeline(k.pipeline))
		}),
		plain("GetPipeline", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetPipeline(ctx, k.pipeline)
			return err
		}),
		plain("ListPipelines", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListPipelines(ctx)
			return err
		}),
		plain("DeletePipeline", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.DeletePipeline(ctx, k.pipeline)
		}),
		plain("PutTrait", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutTrait(ctx, k.pipeline, newTrait(k.trait), 0)
		}),
		plain("GetTraits", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetTraits(ctx, k.pipeline)
			return err
		}),
		plain("GetTrait", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetTrait(ctx, k.pipeline, k.trait)
			return err
		}),
		plain("PutRunState", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutRunState(ctx, newRun(k.pipeline, k.run, at(0)))
		}),
		plain("GetRunState", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetRunState(ctx, k.run)
			return err
		}),
		plain("ListRuns", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListRuns(ctx, k.pipeline, 10)
			return err
		}),
		plain("CompareAndSwapRunState", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.CompareAndSwapRunState(ctx, k.run, 0, newRun(k.pipeline, k.run, at(0)))
			return err
		}),
		plain("AppendEvent", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.AppendEvent(ctx, newEvent(k.pipeline, 1))
		}),
		plain("ListEvents", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListEvents(ctx, k.pipeline, 10)
			return err
		}),
		plain("ReadEventsSince", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ReadEventsSince(ctx, k.pipeline, "", 10)
			return err
		}),
		plain("PutRunLog", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutRunLog(ctx, newRunLog(k.pipeline, k.date, ""))
		}),
		plain("GetRunLog", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetRunLog(ctx, k.pipeline, k.date, "")
			return err
		}),
		plain("ListRunLogs", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListRunLogs(ctx, k.pipeline, 10)
			return err
		}),
		plain("PutRerun", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutRerun(ctx, newRerun(k.rerun, k.pipeline, at(0)))
		}),
		plain("GetRerun", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetRerun(ctx, k.rerun)
			return err
		}),
		plain("ListReruns", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListReruns(ctx, k.pipeline, 10)
			return err
		}),
		plain("ListAllReruns", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListAllReruns(ctx, 10)
			return err
		}),
		plain("WriteCascadeMarker", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.WriteCascadeMarker(ctx, k.pipeline, "", k.date, k.other)
		}),
		plain("PutLateArrival", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutLateArrival(ctx, newLateArrival(k.pipeline, k.date, "", at(0), 1))
		}),
		plain("ListLateArrivals", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListLateArrivals(ctx, k.pipeline, k.date, "")
			return err
		}),
		plain("PutReplay", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutReplay(ctx, newReplay(k.pipeline, k.date, "", at(0)))
		}),
		plain("GetReplay", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetReplay(ctx, k.pipeline, k.date, "")
			return err
		}),
		plain("ListReplays", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListReplays(ctx, 10)
			return err
		}),
		plain("AcquireLock", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.AcquireLock(ctx, k.lock, longTTL)
			return err
		}),
		plain("ReleaseLock", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.ReleaseLock(ctx, k.lock)
		}),
		plain("PutReadiness", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutReadiness(ctx, newReadiness(k.pipeline))
		}),
		plain("GetReadiness", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetReadiness(ctx, k.pipeline)
			return err
		}),
		{call: call{"AcquireLease", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.Leaser).AcquireLease(ctx, k.lock, longTTL)
			return err
		}}, leaser: true},
		{call: call{"RenewLease", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.Leaser).RenewLease(ctx, lease(k), longTTL)
			return err
		}}, leaser: true},
		{call: call{"ReleaseLease", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.(provider.Leaser).ReleaseLease(ctx, lease(k))
		}}, leaser: true},
		{call: call{"ListCascadeMarkers", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.CascadeReader).ListCascadeMarkers(ctx, k.pipeline, 10)
			return err
		}}, reader: true},
	}
	return calls
}
