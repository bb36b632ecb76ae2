package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/fencectx"
	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// fenced is ctx carrying fence f of lease key "job", as provider.Fenced's view
// passes it.
func fenced(ctx context.Context, f int64) context.Context {
	return fencectx.With(ctx, fence.Token{Key: "job", Fence: f})
}

// wantRefused is nil when err is a fence's refusal, else an error saying so.
func wantRefused(err error) error {
	if errors.Is(err, provider.ErrFenced) {
		return nil
	}
	return fmt.Errorf("got %v, want an error wrapping ErrFenced", err)
}

// remembered fails t unless the fence memory at key remembers want for "job".
func remembered(t *testing.T, ctx context.Context, p *Provider, key string, want int64) {
	t.Helper()
	got, err := p.c.HGet(ctx, key, "job").Int64()
	if err != nil || got != want {
		t.Fatalf("fence memory %s remembers %d, %v for job; want %d", key, got, err, want)
	}
}

// fencedLostReplies are the lost-reply rows of the fenced writes: for each, a
// fenced call whose reply is lost after the server applied it reports its first
// attempt's outcome and writes once, and a fenced call that the fence refused is
// refused again by its retry, with nothing written.
func fencedLostReplies() []lostReply {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// row makes the two rows of a write: write(ctx, p) is the write, check what
	// one write of it leaves; setup (nil: none) runs first, unfenced.
	type spec struct {
		method, step string
		match        func(p *Provider) func([]byte) bool
		setup        func(ctx context.Context, a *Provider) error
		write        func(ctx context.Context, p *Provider) error
		check        func(t *testing.T, ctx context.Context, a, b *Provider)
		memory       func(p *Provider) string
	}
	one := func(what string, n int, err error) error {
		if err != nil || n != 1 {
			return fmt.Errorf("%s: %d, %v; want exactly 1", what, n, err)
		}
		return nil
	}
	checked := func(f func(ctx context.Context, b *Provider) error) func(t *testing.T, ctx context.Context, a, b *Provider) {
		return func(t *testing.T, ctx context.Context, _, b *Provider) {
			t.Helper()
			if err := f(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(ctx context.Context, b *Provider) error {
		got, err := b.GetRunState(ctx, lrRun)
		if err != nil || got == nil || got.Version != 0 {
			return fmt.Errorf("GetRunState = %+v, %v", got, err)
		}
		runs, err := b.ListRuns(ctx, lrPipe, 10)
		return one("ListRuns", len(runs), err)
	}
	pipeMemory := func(p *Provider) string { return p.k.fences(p.k.pipeline(lrPipe)) }
	specs := []spec{
		{"PutRunState", "truth", evalsha(scriptRecordPut), nil,
			func(ctx context.Context, p *Provider) error { return p.PutRunState(ctx, lrRunState(0)) }, checked(run),
			func(p *Provider) string { return p.k.fences(p.k.run(lrRun)) }},
		{"CreateRunState", "truth", evalsha(scriptRecordPut), nil,
			func(ctx context.Context, p *Provider) error {
				created, err := p.CreateRunState(ctx, lrRunState(0))
				if err == nil && !created {
					err = errors.New("CreateRunState reported false")
				}
				return err
			}, checked(run),
			func(p *Provider) string { return p.k.fences(p.k.run(lrRun)) }},
		{"CompareAndSwapRunState", "script", evalsha(scriptRunCAS),
			func(ctx context.Context, a *Provider) error { return a.PutRunState(ctx, lrRunState(0)) },
			func(ctx context.Context, p *Provider) error {
				ok, err := p.CompareAndSwapRunState(ctx, lrRun, 0, lrRunState(0))
				if err == nil && !ok {
					err = errors.New("CAS reported false")
				}
				return err
			},
			checked(func(ctx context.Context, b *Provider) error {
				got, err := b.GetRunState(ctx, lrRun)
				if err != nil || got == nil || got.Version != 1 {
					return fmt.Errorf("after one CAS: %+v, %v; want version 1", got, err)
				}
				return nil
			}),
			func(p *Provider) string { return p.k.fences(p.k.run(lrRun)) }},
		{"AppendEvent", "script", evalsha(scriptAppendOnce), nil,
			func(ctx context.Context, p *Provider) error {
				return p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: lrPipe})
			},
			checked(func(ctx context.Context, b *Provider) error {
				evs, err := b.ReadEventsSince(ctx, lrPipe, "", 10)
				return one("events", len(evs), err)
			}), pipeMemory},
		{"PutLateArrival", "script", evalsha(scriptAppendOnce), nil,
			func(ctx context.Context, p *Provider) error {
				return p.PutLateArrival(ctx, types.LateArrival{PipelineID: lrPipe, Date: lrDate, RecordDelta: 3})
			},
			checked(func(ctx context.Context, b *Provider) error {
				ls, err := b.ListLateArrivals(ctx, lrPipe, lrDate, "")
				return one("ListLateArrivals", len(ls), err)
			}), pipeMemory},
		{"PutRunLog", "script", evalsha(scriptSlotPut), nil,
			func(ctx context.Context, p *Provider) error {
				return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: lrPipe, Date: lrDate, Status: types.RunRunning})
			},
			checked(func(ctx context.Context, b *Provider) error {
				ls, err := b.ListRunLogs(ctx, lrPipe, 10)
				return one("ListRunLogs", len(ls), err)
			}), pipeMemory},
		{"WriteCascadeMarker", "script", evalsha(scriptSlotPut), nil,
			func(ctx context.Context, p *Provider) error {
				return p.WriteCascadeMarker(ctx, lrPipe, "", lrDate, "up")
			},
			checked(func(ctx context.Context, b *Provider) error {
				ms, err := b.ListCascadeMarkers(ctx, lrPipe, 10)
				return one("ListCascadeMarkers", len(ms), err)
			}), pipeMemory},
		{"PutRerun", "truth", evalsha(scriptRecordPut), nil,
			func(ctx context.Context, p *Provider) error { return p.PutRerun(ctx, lrRerun()) },
			checked(func(ctx context.Context, b *Provider) error {
				if got, err := b.GetRerun(ctx, "rerun1"); err != nil || got == nil {
					return fmt.Errorf("GetRerun = %+v, %v", got, err)
				}
				rs, err := b.ListReruns(ctx, lrPipe, 10)
				if err := one("ListReruns", len(rs), err); err != nil {
					return err
				}
				rs, err = b.ListAllReruns(ctx, 10)
				return one("ListAllReruns", len(rs), err)
			}),
			func(p *Provider) string { return p.k.fences(p.k.rerun("rerun1")) }},
		{"PutReplay", "truth", evalsha(scriptRecordPut), nil,
			func(ctx context.Context, p *Provider) error {
				return p.PutReplay(ctx, types.ReplayRequest{PipelineID: lrPipe, Date: lrDate, Status: types.RequestPending, CreatedAt: at})
			},
			checked(func(ctx context.Context, b *Provider) error {
				if got, err := b.GetReplay(ctx, lrPipe, lrDate, ""); err != nil || got == nil {
					return fmt.Errorf("GetReplay = %+v, %v", got, err)
				}
				rs, err := b.ListReplays(ctx, 10)
				return one("ListReplays", len(rs), err)
			}), pipeMemory},
	}
	var rows []lostReply
	for _, s := range specs {
		setup := func(ctx context.Context, a *Provider) error {
			if s.setup == nil {
				return nil
			}
			return s.setup(ctx, a)
		}
		rows = append(rows,
			lostReply{s.method, "fenced " + s.step, s.match,
				func(ctx context.Context, a, _ *Provider) error { return setup(ctx, a) },
				func(ctx context.Context, a *Provider) error { return s.write(fenced(ctx, 3), a) },
				func(t *testing.T, ctx context.Context, a, b *Provider) {
					s.check(t, ctx, a, b)
					remembered(t, ctx, b, s.memory(b), 3)
				}},
			lostReply{s.method, "fence refused " + s.step, s.match,
				func(ctx context.Context, a, b *Provider) error {
					if err := setup(ctx, a); err != nil {
						return err
					}
					return s.write(fenced(ctx, 5), b)
				},
				func(ctx context.Context, a *Provider) error { return wantRefused(s.write(fenced(ctx, 4), a)) },
				func(t *testing.T, ctx context.Context, a, b *Provider) {
					s.check(t, ctx, a, b) // what the fence 5 write left, once
					remembered(t, ctx, b, s.memory(b), 5)
				}},
		)
	}
	return rows
}

// fencedInterleavings are the interleavings of the fenced writes: a call fenced
// 1 whose first attempt applied, a newer holder's write (fence 2, another
// instance) before go-redis's retry, and the retry reports the first attempt's
// success (not a refusal) and writes nothing over the newer holder's.
func fencedInterleavings() []interleaving {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	version := func(want int) func(t *testing.T, ctx context.Context, _, _, b *Provider) {
		return func(t *testing.T, ctx context.Context, _, _, b *Provider) {
			got, err := b.GetRunState(ctx, lrRun)
			if err != nil || got == nil || got.Version != want {
				t.Fatalf("GetRunState = %+v, %v; want the newer holder's version %d", got, err, want)
			}
			remembered(t, ctx, b, b.k.fences(b.k.run(lrRun)), 2)
		}
	}
	putRun := func(v int) func(ctx context.Context, p *Provider) error {
		return func(ctx context.Context, p *Provider) error { return p.PutRunState(ctx, lrRunState(v)) }
	}
	count := func(what string, want int, n int, err error) func(t *testing.T) {
		return func(t *testing.T) {
			t.Helper()
			if err != nil || n != want {
				t.Fatalf("%s: %d, %v; want %d", what, n, err, want)
			}
		}
	}
	runLog := func(n int) types.RunLogEntry {
		return types.RunLogEntry{PipelineID: lrPipe, Date: lrDate, Status: types.RunRunning, AttemptNumber: n}
	}
	rerun := func(reason string) types.RerunRecord { r := lrRerun(); r.Reason = reason; return r }
	replay := func(reason string) types.ReplayRequest {
		return types.ReplayRequest{PipelineID: lrPipe, Date: lrDate, Status: types.RequestPending, Reason: reason, CreatedAt: at}
	}
	return []interleaving{
		{"fenced PutRunState/newer holder puts between", scriptRecordPut, nil,
			func(ctx context.Context, _, _, b *Provider) error { return putRun(7)(fenced(ctx, 2), b) },
			func(t *testing.T, ctx context.Context, a *Provider) error { return putRun(0)(fenced(ctx, 1), a) },
			version(7)},
		{"fenced CreateRunState/newer holder puts between", scriptRecordPut, nil,
			func(ctx context.Context, _, _, b *Provider) error { return putRun(7)(fenced(ctx, 2), b) },
			func(t *testing.T, ctx context.Context, a *Provider) error {
				created, err := a.CreateRunState(fenced(ctx, 1), lrRunState(0))
				if err == nil && !created {
					err = errors.New("a create whose first attempt created reported false")
				}
				return err
			},
			version(7)},
		{"fenced CompareAndSwapRunState/newer holder swaps between", scriptRunCAS, putRun(0),
			func(ctx context.Context, _, _, b *Provider) error {
				ok, err := b.CompareAndSwapRunState(fenced(ctx, 2), lrRun, 1, lrRunState(0))
				if !ok || err != nil {
					return fmt.Errorf("CAS fenced 2 from version 1 = %v, %v", ok, err)
				}
				return nil
			},
			func(t *testing.T, ctx context.Context, a *Provider) error {
				ok, err := a.CompareAndSwapRunState(fenced(ctx, 1), lrRun, 0, lrRunState(0))
				if err == nil && !ok {
					err = errors.New("a CAS whose first attempt swapped reported false")
				}
				return err
			},
			version(2)},
		{"fenced PutRunLog/newer holder puts between", scriptSlotPut, nil,
			func(ctx context.Context, _, _, b *Provider) error { return b.PutRunLog(fenced(ctx, 2), runLog(2)) },
			func(t *testing.T, ctx context.Context, a *Provider) error {
				return a.PutRunLog(fenced(ctx, 1), runLog(1))
			},
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				got, err := b.GetRunLog(ctx, lrPipe, lrDate, "")
				if err != nil || got == nil || got.AttemptNumber != 2 {
					t.Fatalf("GetRunLog = %+v, %v; want the newer holder's attempt 2", got, err)
				}
			}},
		{"fenced WriteCascadeMarker/newer holder writes between", scriptSlotPut, nil,
			func(ctx context.Context, _, _, b *Provider) error {
				return b.WriteCascadeMarker(fenced(ctx, 2), lrPipe, "", lrDate, "newer")
			},
			func(t *testing.T, ctx context.Context, a *Provider) error {
				return a.WriteCascadeMarker(fenced(ctx, 1), lrPipe, "", lrDate, "older")
			},
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				ms, err := b.ListCascadeMarkers(ctx, lrPipe, 10)
				if err != nil || len(ms) != 1 || ms[0].Source != "newer" {
					t.Fatalf("ListCascadeMarkers = %+v, %v; want the newer holder's marker", ms, err)
				}
			}},
		{"fenced AppendEvent/newer holder appends between", scriptAppendOnce, nil,
			func(ctx context.Context, _, _, b *Provider) error {
				return b.AppendEvent(fenced(ctx, 2), types.Event{Kind: "K", PipelineID: lrPipe})
			},
			func(t *testing.T, ctx context.Context, a *Provider) error {
				return a.AppendEvent(fenced(ctx, 1), types.Event{Kind: "K", PipelineID: lrPipe})
			},
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				evs, err := b.ReadEventsSince(ctx, lrPipe, "", 10)
				count("events", 2, len(evs), err)(t)
			}},
		{"fenced PutLateArrival/newer holder appends between", scriptAppendOnce, nil,
			func(ctx context.Context, _, _, b *Provider) error {
				return b.PutLateArrival(fenced(ctx, 2), types.LateArrival{PipelineID: lrPipe, Date: lrDate, RecordDelta: 2})
			},
			func(t *testing.T, ctx context.Context, a *Provider) error {
				return a.PutLateArrival(fenced(ctx, 1), types.LateArrival{PipelineID: lrPipe, Date: lrDate, RecordDelta: 1})
			},
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				ls, err := b.ListLateArrivals(ctx, lrPipe, lrDate, "")
				count("late arrivals", 2, len(ls), err)(t)
			}},
		{"fenced PutRerun/newer holder puts between", scriptRecordPut, nil,
			func(ctx context.Context, _, _, b *Provider) error { return b.PutRerun(fenced(ctx, 2), rerun("newer")) },
			func(t *testing.T, ctx context.Context, a *Provider) error {
				return a.PutRerun(fenced(ctx, 1), rerun("older"))
			},
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				got, err := b.GetRerun(ctx, "rerun1")
				if err != nil || got == nil || got.Reason != "newer" {
					t.Fatalf("GetRerun = %+v, %v; want the newer holder's", got, err)
				}
				rs, err := b.ListAllReruns(ctx, 10)
				count("ListAllReruns", 1, len(rs), err)(t)
			}},
		{"fenced PutReplay/newer holder puts between", scriptRecordPut, nil,
			func(ctx context.Context, _, _, b *Provider) error {
				return b.PutReplay(fenced(ctx, 2), replay("newer"))
			},
			func(t *testing.T, ctx context.Context, a *Provider) error {
				return a.PutReplay(fenced(ctx, 1), replay("older"))
			},
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				got, err := b.GetReplay(ctx, lrPipe, lrDate, "")
				if err != nil || got == nil || got.Reason != "newer" {
					t.Fatalf("GetReplay = %+v, %v; want the newer holder's", got, err)
				}
				rs, err := b.ListReplays(ctx, 10)
				count("ListReplays", 1, len(rs), err)(t)
			}},
	}
}

// TestFenceMemoryTTL checks the fence memory's lifetime rule: a fenced write
// gives its hash tag's fence memory the server TTL of the record it wrote plus
// a slack (redisx.FenceMemoryMillis) when the record's is longer than the
// memory's, never a shorter one, and none (PERSIST) when the record never
// expires (an event stream); an unfenced write extends an existing one as a
// fenced write does, and creates none, and one inside the slack leaves it
// alone; a refused write leaves it as it is.
func TestFenceMemoryTTL(t *testing.T) {
	ctx := t.Context()
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	r := provider.DefaultRetention()
	r.RunLogs, r.LateArrivals, r.Runs = time.Hour, 3*time.Hour, 2*time.Hour
	p, err := New(c, WithRetention(r))
	must(t, err)
	must(t, p.Start(ctx))
	mem := p.k.fences(p.k.pipeline(lrPipe))
	// kept is the memory's TTL for a record of lifetime d, less passed.
	kept := func(d, passed time.Duration) time.Duration {
		return time.Duration(redisx.FenceMemoryMillis(redisx.Millis(d)))*time.Millisecond - passed
	}
	ttl := func(key string, want time.Duration) {
		t.Helper()
		got, err := c.PTTL(ctx, key).Result()
		if err != nil || got != want {
			t.Fatalf("PTTL %s = %v, %v; want %v", key, got, err, want)
		}
	}
	runLog := func(ctx context.Context) error {
		return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: lrPipe, Date: lrDate, Status: types.RunRunning})
	}
	late := func(ctx context.Context) error {
		return p.PutLateArrival(ctx, types.LateArrival{PipelineID: lrPipe, Date: lrDate, RecordDelta: 1})
	}
	must(t, runLog(ctx)) // unfenced: no memory
	ttl(mem, -2)
	must(t, runLog(fenced(ctx, 2)))
	ttl(mem, kept(time.Hour+deleteSlack, 0))
	must(t, late(fenced(ctx, 2))) // a longer-lived record lengthens it
	ttl(mem, kept(3*time.Hour+deleteSlack, 0))
	m.FastForward(time.Minute)
	must(t, runLog(fenced(ctx, 3))) // a shorter-lived one does not shorten it
	ttl(mem, kept(3*time.Hour+deleteSlack, time.Minute))
	if err := wantRefused(late(fenced(ctx, 1))); err != nil {
		t.Fatal(err)
	}
	must(t, late(ctx)) // unfenced, inside the slack: it extends the list, not the memory
	ttl(mem, kept(3*time.Hour+deleteSlack, time.Minute))
	m.FastForward(time.Hour)
	must(t, late(ctx)) // unfenced, past the slack: it extends the list, and so the memory
	ttl(mem, kept(3*time.Hour+deleteSlack, 0))
	must(t, p.AppendEvent(fenced(ctx, 3), types.Event{Kind: "K", PipelineID: lrPipe})) // a stream never expires
	ttl(mem, -1)
	must(t, late(fenced(ctx, 3)))
	ttl(mem, -1)
	// A run's memory is its own, with the run's TTL.
	must(t, p.PutRunState(fenced(ctx, 1), lrRunState(0)))
	ttl(p.k.fences(p.k.run(lrRun)), kept(2*time.Hour+deleteSlack, 0))
	remembered(t, ctx, p, p.k.fences(p.k.run(lrRun)), 1)
	remembered(t, ctx, p, mem, 3)
	// A record kept forever keeps its memory forever.
	forever, err := New(c, WithRetention(provider.Forever()), WithKeyPrefix("forever"))
	must(t, err)
	must(t, forever.PutRunState(fenced(ctx, 1), lrRunState(0)))
	ttl(forever.k.fences(forever.k.run(lrRun)), -1)
}
