package redisprovider_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// fencedWrite is one write that takes a fence: write stores label n through p
// (an unfenced provider or a fenced view), read returns what is stored (the
// labels, in order for appends).
type fencedWrite struct {
	name  string
	write func(ctx context.Context, p provider.Provider, n int) error
	read  func(ctx context.Context, p *redisprovider.Provider) (string, error)
}

const (
	fpPipe = "fp"
	fpDate = "2026-01-02"
)

func fencedWrites() []fencedWrite {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(n int) types.RunState {
		return types.RunState{RunID: "fr1", PipelineID: fpPipe, Status: types.RunRunning, Version: n, CreatedAt: at}
	}
	str := func(v any, err error) (string, error) { return fmt.Sprint(v), err }
	return []fencedWrite{
		{"PutRunState", func(ctx context.Context, p provider.Provider, n int) error { return p.PutRunState(ctx, run(n)) },
			func(ctx context.Context, p *redisprovider.Provider) (string, error) {
				r, err := p.GetRunState(ctx, "fr1")
				if r == nil {
					return "", err
				}
				return strconv.Itoa(r.Version), err
			}},
		{"CompareAndSwapRunState", func(ctx context.Context, p provider.Provider, n int) error {
			r, err := p.GetRunState(ctx, "fr1")
			if err != nil {
				return err
			}
			if r == nil {
				return p.PutRunState(ctx, run(0))
			}
			ok, err := p.CompareAndSwapRunState(ctx, "fr1", r.Version, types.RunState{RunID: "fr1", PipelineID: fpPipe,
				Status: types.RunRunning, Metadata: map[string]any{"n": strconv.Itoa(n)}})
			if err == nil && !ok {
				err = errors.New("CAS on the current version reported false")
			}
			return err
		}, func(ctx context.Context, p *redisprovider.Provider) (string, error) {
			r, err := p.GetRunState(ctx, "fr1")
			if r == nil {
				return "", err
			}
			return fmt.Sprint(r.Metadata["n"]), err
		}},
		{"AppendEvent", func(ctx context.Context, p provider.Provider, n int) error {
			return p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: fpPipe, Message: strconv.Itoa(n)})
		}, func(ctx context.Context, p *redisprovider.Provider) (string, error) {
			evs, err := p.ReadEventsSince(ctx, fpPipe, "", 100)
			var s []string
			for _, e := range evs {
				s = append(s, e.Event.Message)
			}
			return fmt.Sprint(s), err
		}},
		{"PutLateArrival", func(ctx context.Context, p provider.Provider, n int) error {
			return p.PutLateArrival(ctx, types.LateArrival{PipelineID: fpPipe, Date: fpDate, RecordDelta: int64(n)})
		}, func(ctx context.Context, p *redisprovider.Provider) (string, error) {
			ls, err := p.ListLateArrivals(ctx, fpPipe, fpDate, "")
			var s []int64
			for _, l := range ls {
				s = append(s, l.RecordDelta)
			}
			return fmt.Sprint(s), err
		}},
		{"PutRunLog", func(ctx context.Context, p provider.Provider, n int) error {
			return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: fpPipe, Date: fpDate, Status: types.RunRunning, AttemptNumber: n})
		}, func(ctx context.Context, p *redisprovider.Provider) (string, error) {
			e, err := p.GetRunLog(ctx, fpPipe, fpDate, "")
			if e == nil {
				return "", err
			}
			return strconv.Itoa(e.AttemptNumber), err
		}},
		{"WriteCascadeMarker", func(ctx context.Context, p provider.Provider, n int) error {
			return p.WriteCascadeMarker(ctx, fpPipe, "", fpDate, strconv.Itoa(n))
		}, func(ctx context.Context, p *redisprovider.Provider) (string, error) {
			ms, err := p.ListCascadeMarkers(ctx, fpPipe, 10)
			var s []string
			for _, m := range ms {
				s = append(s, m.Source)
			}
			return fmt.Sprint(s), err
		}},
		{"PutRerun", func(ctx context.Context, p provider.Provider, n int) error {
			return p.PutRerun(ctx, types.RerunRecord{RerunID: "fre1", PipelineID: fpPipe, OriginalDate: fpDate,
				Status: types.RequestPending, Reason: strconv.Itoa(n), RequestedAt: at})
		}, func(ctx context.Context, p *redisprovider.Provider) (string, error) {
			r, err := p.GetRerun(ctx, "fre1")
			if r == nil {
				return "", err
			}
			rs, lerr := p.ListReruns(ctx, fpPipe, 10)
			return str(fmt.Sprintf("%s/%d", r.Reason, len(rs)), errors.Join(err, lerr))
		}},
		{"PutReplay", func(ctx context.Context, p provider.Provider, n int) error {
			return p.PutReplay(ctx, types.ReplayRequest{PipelineID: fpPipe, Date: fpDate, Status: types.RequestPending,
				Reason: strconv.Itoa(n), CreatedAt: at})
		}, func(ctx context.Context, p *redisprovider.Provider) (string, error) {
			r, err := p.GetReplay(ctx, fpPipe, fpDate, "")
			if r == nil {
				return "", err
			}
			rs, lerr := p.ListReplays(ctx, 10)
			return str(fmt.Sprintf("%s/%d", r.Reason, len(rs)), errors.Join(err, lerr))
		}},
	}
}

func lease(key string, fence int64) types.Lease {
	return types.Lease{Key: key, Token: "t" + strconv.FormatInt(fence, 10), Fence: fence}
}

func fencedView(t *testing.T, p provider.Provider, key string, fence int64) provider.Provider {
	t.Helper()
	fp, err := provider.Fenced(p, lease(key, fence))
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// fenceTargets are the servers of the fence tests: a client and a key prefix.
func fenceTargets(t *testing.T) map[string]func(t *testing.T) (goredis.UniversalClient, string) {
	targets := map[string]func(t *testing.T) (goredis.UniversalClient, string){
		"miniredis": func(t *testing.T) (goredis.UniversalClient, string) {
			m := miniredis.RunT(t)
			c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return c, "fence"
		},
	}
	if testenv.RedisWanted() {
		targets["redis"] = func(t *testing.T) (goredis.UniversalClient, string) {
			return realClient(t), "pst:" + testenv.RedisPrefix(t)
		}
	}
	if testenv.RedisClusterWanted() {
		targets["cluster"] = func(t *testing.T) (goredis.UniversalClient, string) {
			return clusterClient(t), "pst:" + testenv.RedisPrefix(t)
		}
	}
	return targets
}

// TestFencedWrites checks the rule of package fence on every write that takes a
// fence, on miniredis, a real server and a cluster (no CROSSSLOT: the fence
// memory shares the record's slot): a newer fence's write makes an older one's
// fail with nothing written, equal fences pass, another lease key neither
// passes nor blocks, and an unfenced write neither checks nor resets what the
// record remembers.
func TestFencedWrites(t *testing.T) {
	for name, target := range fenceTargets(t) {
		t.Run(name, func(t *testing.T) {
			for _, w := range fencedWrites() {
				t.Run(w.name, func(t *testing.T) {
					ctx := t.Context()
					c, prefix := target(t)
					p := openProvider(t, c, redisprovider.WithKeyPrefix(prefix)) // a prefix per test
					read := func() string {
						t.Helper()
						s, err := w.read(ctx, p)
						if err != nil {
							t.Fatalf("read: %v", err)
						}
						return s
					}
					if err := w.write(ctx, fencedView(t, p, "job", 2), 1); err != nil {
						t.Fatalf("first fenced write: %v", err)
					}
					if err := w.write(ctx, fencedView(t, p, "job", 2), 2); err != nil {
						t.Fatalf("fenced write: %v", err)
					}
					want := read()
					err := w.write(ctx, fencedView(t, p, "job", 1), 3)
					if !errors.Is(err, provider.ErrFenced) || !errors.Is(err, provider.ErrLockNotHeld) {
						t.Fatalf("write of an older fence = %v, want ErrFenced", err)
					}
					if got := read(); got != want {
						t.Fatalf("a refused write wrote: %s, want %s", got, want)
					}
					if err := w.write(ctx, fencedView(t, p, "other", 1), 4); err != nil {
						t.Fatalf("write of another lease key: %v", err)
					}
					if err := w.write(ctx, p, 5); err != nil { // unfenced
						t.Fatalf("unfenced write: %v", err)
					}
					want = read()
					if err := w.write(ctx, fencedView(t, p, "job", 1), 6); !errors.Is(err, provider.ErrFenced) {
						t.Fatalf("after an unfenced write, a write of the older fence = %v, want ErrFenced", err)
					}
					if got := read(); got != want {
						t.Fatalf("a refused write wrote: %s, want %s", got, want)
					}
					if err := w.write(ctx, fencedView(t, p, "job", 3), 7); err != nil {
						t.Fatalf("write of a newer fence: %v", err)
					}
					if err := w.write(ctx, fencedView(t, p, "job", 2), 8); !errors.Is(err, provider.ErrFenced) {
						t.Fatalf("write of fence 2 after fence 3 = %v, want ErrFenced", err)
					}
				})
			}
		})
	}
}

// TestFencedCreate checks CreateRunState: a stale holder's create of a run a
// newer fence created is refused as fenced, not answered false.
func TestFencedCreate(t *testing.T) {
	for name, target := range fenceTargets(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			c, prefix := target(t)
			p := openProvider(t, c, redisprovider.WithKeyPrefix(prefix))
			run := types.RunState{RunID: "c1", PipelineID: fpPipe, Status: types.RunPending}
			create := func(fence int64) (bool, error) {
				return fencedView(t, p, "job", fence).(provider.RunCreator).CreateRunState(ctx, run)
			}
			if ok, err := create(2); !ok || err != nil {
				t.Fatalf("create = %v, %v", ok, err)
			}
			if ok, err := create(1); ok || !errors.Is(err, provider.ErrFenced) {
				t.Fatalf("stale create = %v, %v; want ErrFenced", ok, err)
			}
			if ok, err := create(2); ok || err != nil {
				t.Fatalf("create again = %v, %v; want false", ok, err)
			}
			runs, err := p.ListRuns(ctx, fpPipe, 10)
			if err != nil || len(runs) != 1 {
				t.Fatalf("ListRuns = %v, %v", runs, err)
			}
		})
	}
}
