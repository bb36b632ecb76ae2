package redisprovider_test

import (
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
)

// fenceMemoryOf is the fence memory key of w's record under prefix.
func fenceMemoryOf(prefix, write string) string {
	switch write {
	case "PutRunState", "CompareAndSwapRunState":
		return prefix + ":{run:fr1}:fences"
	case "PutRerun":
		return prefix + ":{rerun:fre1}:fences"
	}
	return prefix + ":{" + fpPipe + "}:fences"
}

// TestFenceMemoryOutlivesRewrite is issue 35's breach 1 on miniredis, with
// time: a record written under fence 2 with a 1 h retention, rewritten 30 min
// later (unfenced, as the CLI's `run fail` or any PutRunState does, or fenced
// again), then fence 1 45 min after that, when only the first write's retention
// has passed: the record is live, so fence 1 is refused and writes nothing.
// Before the fix the unfenced rewrite left the memory to expire with the first
// write, and fence 1 overwrote the newer holder's record.
func TestFenceMemoryOutlivesRewrite(t *testing.T) {
	r := provider.DefaultRetention()
	r.Runs, r.RunLogs, r.Reruns, r.Replays, r.LateArrivals, r.CascadeMarkers = time.Hour, time.Hour, time.Hour, time.Hour, time.Hour, time.Hour
	for _, rewrite := range []string{"unfenced", "fenced"} {
		for _, w := range fencedWrites() {
			if w.name == "AppendEvent" { // a stream never expires: its memory neither
				continue
			}
			t.Run(rewrite+"/"+w.name, func(t *testing.T) {
				ctx := t.Context()
				m := miniredis.RunT(t)
				c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
				t.Cleanup(func() { _ = c.Close() })
				clock := &fakeClock{}
				sleep := func(d time.Duration) { clock.add(d); m.FastForward(d) }
				p := openProvider(t, c, redisprovider.WithClock(clock.now), redisprovider.WithRetention(r))
				if err := w.write(ctx, fencedView(t, p, "job", 2), 1); err != nil {
					t.Fatalf("fenced write: %v", err)
				}
				sleep(30 * time.Minute)
				var again provider.Provider = p
				if rewrite == "fenced" {
					again = fencedView(t, p, "job", 2)
				}
				if err := w.write(ctx, again, 2); err != nil {
					t.Fatalf("%s rewrite: %v", rewrite, err)
				}
				sleep(45 * time.Minute)
				want, err := w.read(ctx, p)
				if err != nil || want == "" || want == "[]" {
					t.Fatalf("the rewritten record = %q, %v; want it live", want, err)
				}
				err = w.write(ctx, fencedView(t, p, "job", 1), 3)
				if !errors.Is(err, provider.ErrFenced) {
					t.Errorf("fence 1 after fence 2 wrote a record that is still live = %v, want ErrFenced", err)
				}
				if got, _ := w.read(ctx, p); got != want {
					t.Errorf("the stale holder's write changed the record from %s to %s", want, got)
				}
			})
		}
	}
}

// TestFenceMemoryLongerRetention checks, on miniredis, a real server and a
// cluster, that every write of a record that may be fenced, fenced or not,
// gives an existing fence memory at least the record's new server TTL: a
// record written under a fence by an instance with a 1 h retention, then
// rewritten by one with a 3 h retention, leaves its memory with more than 2 h
// to live (it had about 1 h before the fix when the rewrite was unfenced). An
// unfenced write never creates a memory.
func TestFenceMemoryLongerRetention(t *testing.T) {
	retention := func(d time.Duration) provider.Retention {
		r := provider.DefaultRetention()
		r.Runs, r.RunLogs, r.Reruns, r.Replays, r.LateArrivals, r.CascadeMarkers = d, d, d, d, d, d
		return r
	}
	for name, target := range fenceTargets(t) {
		t.Run(name, func(t *testing.T) {
			for _, rewrite := range []string{"unfenced", "fenced"} {
				for _, w := range fencedWrites() {
					if w.name == "AppendEvent" {
						continue
					}
					t.Run(rewrite+"/"+w.name, func(t *testing.T) {
						ctx := t.Context()
						c, prefix := target(t)
						short := openProvider(t, c, redisprovider.WithKeyPrefix(prefix), redisprovider.WithRetention(retention(time.Hour)))
						long := openProvider(t, c, redisprovider.WithKeyPrefix(prefix), redisprovider.WithRetention(retention(3*time.Hour)))
						mem := fenceMemoryOf(prefix, w.name)
						pttl := func() time.Duration {
							t.Helper()
							d, err := c.PTTL(ctx, mem).Result()
							if err != nil {
								t.Fatal(err)
							}
							return d
						}
						if err := w.write(ctx, long, 1); err != nil {
							t.Fatalf("unfenced write: %v", err)
						}
						if d := pttl(); d != -2 {
							t.Fatalf("an unfenced write made a fence memory (PTTL %v)", d)
						}
						if err := w.write(ctx, fencedView(t, short, "job", 2), 2); err != nil {
							t.Fatalf("fenced write: %v", err)
						}
						// A late arrivals list, and the hash of run logs or of
						// cascade markers, lives as long as its longest-lived
						// element: the unfenced one, 3 h. The memory follows the
						// keys' resulting lifetime, one rule for all three (run
						// logs and markers followed the write's own, 1 h, before).
						switch d := pttl(); w.name {
						case "PutLateArrival", "PutRunLog", "WriteCascadeMarker":
							if d < 2*time.Hour {
								t.Errorf("after a fenced %s kept 1 h in keys kept 3 h the fence memory has %v to live, want the keys'", w.name, d)
							}
						}
						var again provider.Provider = long
						if rewrite == "fenced" {
							again = fencedView(t, long, "job", 2)
						}
						if err := w.write(ctx, again, 3); err != nil {
							t.Fatalf("%s rewrite: %v", rewrite, err)
						}
						if d := pttl(); d < 2*time.Hour {
							t.Errorf("after a %s rewrite with a 3 h retention the fence memory has %v to live, want at least the record's", rewrite, d)
						}
					})
				}
			}
		})
	}
}
