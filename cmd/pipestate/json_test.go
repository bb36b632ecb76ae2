package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/types"
)

// decodeLines parses each line of out as one T, rejecting unknown fields.
func decodeLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var vs []T
	for line := range strings.Lines(out) {
		var v T
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		vs = append(vs, v)
	}
	return vs
}

// jsonCase is a --json command line and the check of its parsed output.
type jsonCase struct {
	args  string
	check func(t *testing.T, out string)
}

// want fails t unless got equals want.
func want[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

var jsonCases = []jsonCase{
	{"pipelines list", func(t *testing.T, out string) {
		ps := decodeLines[types.PipelineConfig](t, out)
		want(t, "pipelines", len(ps), 3)
		want(t, "orders' freshness ttl", ps[2].Traits["freshness"].TTL.String(), "1h0m0s")
	}},
	{"pipelines show orders", func(t *testing.T, out string) {
		want(t, "downstream", decodeLines[types.PipelineConfig](t, out)[0].Downstream[0], "billing")
	}},
	{"runs orders", func(t *testing.T, out string) {
		rs := decodeLines[types.RunState](t, out)
		want(t, "runs", len(rs), 4)
		want(t, "newest", rs[0].RunID, "r-0004")
		want(t, "r-0003's version", rs[1].Version, 4)
	}},
	{"run r-0003", func(t *testing.T, out string) {
		r := decodeLines[types.RunState](t, out)[0]
		want(t, "status", r.Status, types.RunRunning)
		want(t, "updated", r.UpdatedAt, at(21, 5, 48))
		want(t, "metadata host", r.Metadata["host"], any("worker-7"))
	}},
	{"events orders --limit 3", func(t *testing.T, out string) {
		rs := decodeLines[types.EventRecord](t, out) // the shape of --since and --follow: with cursors
		want(t, "events", len(rs), 3)
		want(t, "oldest", rs[0].Event.TraitType, "freshness")
		if rs[0].StreamID == "" || rs[0].StreamID == rs[2].StreamID {
			t.Errorf("cursors %q, %q: want two different ones", rs[0].StreamID, rs[2].StreamID)
		}
	}},
	{"events orders --since= --limit 2", func(t *testing.T, out string) {
		rs := decodeLines[types.EventRecord](t, out)
		want(t, "records", len(rs), 2)
		want(t, "second", rs[1].Event.Message, "upstream timeout\nretrying in 5m")
		if rs[0].StreamID == "" || rs[0].StreamID == rs[1].StreamID {
			t.Errorf("cursors %q, %q: want two different ones", rs[0].StreamID, rs[1].StreamID)
		}
	}},
	{"runlogs orders --limit 2", func(t *testing.T, out string) {
		ls := decodeLines[types.RunLogEntry](t, out)
		want(t, "entries", len(ls), 2)
		want(t, "newest", ls[0].FailureCategory, "TIMEOUT")
	}},
	{"runlogs orders --date 2026-11-21", func(t *testing.T, out string) {
		want(t, "retry", decodeLines[types.RunLogEntry](t, out)[0].RetryHistory[0].RunID, "r-0002")
	}},
	{"reruns --all", func(t *testing.T, out string) {
		rs := decodeLines[types.RerunRecord](t, out)
		want(t, "reruns", len(rs), 3)
		want(t, "rr-2 completed", *rs[2].CompletedAt, at(20, 10, 0))
	}},
	{"replays orders", func(t *testing.T, out string) {
		want(t, "by", decodeLines[types.ReplayRequest](t, out)[0].RequestedBy, "alice")
	}},
	{"late orders --date 2026-11-20", func(t *testing.T, out string) {
		ls := decodeLines[types.LateArrival](t, out)
		want(t, "late arrivals", len(ls), 2)
		want(t, "second delta", ls[1].RecordDelta, int64(-5))
	}},
	{"markers billing", func(t *testing.T, out string) {
		ms := decodeLines[types.CascadeMarker](t, out)
		want(t, "markers", len(ms), 2)
		want(t, "newest written", ms[0].WrittenAt, at(21, 5, 40))
	}},
	{"traits orders", func(t *testing.T, out string) {
		ts := decodeLines[types.TraitEvaluation](t, out)
		want(t, "live traits", len(ts), 2)
		want(t, "freshness expiry", *ts[0].ExpiresAt, at(21, 6, 30))
	}},
	{"readiness orders", func(t *testing.T, out string) {
		r := decodeLines[types.ReadinessResult](t, out)[0]
		want(t, "status", r.Status, types.NotReady)
		want(t, "blocking", strings.Join(r.Blocking, ","), "schema,volume")
	}},
	{"lock show eval:orders:daily", func(t *testing.T, out string) {
		want(t, "lock", decodeLines[lockJSON](t, out)[0], lockJSON{types.LockInfo{Key: "eval:orders:daily", Owner: "worker-7"}, "lock"})
	}},
	{"lock sched:orders", func(t *testing.T, out string) {
		lj := decodeLines[lockJSON](t, out)[0]
		want(t, "kind", lj.Kind, "lease")
		l := lj.LockInfo
		want(t, "key", l.Key, "sched:orders")
		want(t, "fence", l.Fence, 2)
		want(t, "a lease, without owner", l.IsLease() && l.Owner == "", true)
		if exp := now.Add(12*time.Hour + 30*time.Minute); l.ExpiresAt == nil || l.ExpiresAt.After(exp) || l.ExpiresAt.Before(exp.Add(-time.Hour)) {
			t.Errorf("expiresAt %v, want at most an hour before %v", l.ExpiresAt, exp)
		}
	}},
	{"state get topk --entity pages --window 1h --from 2026-11-21T03:00 --to 2026-11-21T06:00 --capacity 10 {STORE}", func(t *testing.T, out string) {
		r := decodeLines[stateResult](t, out)[0]
		want(t, "found", r.Found, 2)
		want(t, "top item", r.Items[0], topItem{"/home", 3, 0})
	}},
	{"state get bloom --entity urls --contains /b {STORE}", func(t *testing.T, out string) {
		want(t, "contains /b", decodeLines[stateResult](t, out)[0].Contains["/b"], true)
	}},
	{"state get float64sum --entity revenue {STORE}", func(t *testing.T, out string) {
		want(t, "value", decodeLines[stateResult](t, out)[0].Value, any(1234.5))
	}},
	{"run fail r-0003 --version 4 --reason stuck --yes", func(t *testing.T, out string) {
		r := decodeLines[types.RunState](t, out)[0]
		want(t, "status", r.Status, types.RunFailed)
		want(t, "version", r.Version, 5)
	}},
	{"run fail r-0003 --version 5 --reason stuck --yes", func(t *testing.T, out string) {
		want(t, "version", decodeLines[types.RunState](t, out)[0].Version, 5) // already FAILED: unchanged
	}},
	{"lock release eval:orders:daily --owner worker-7 --reason gone --yes", func(t *testing.T, out string) {
		type released struct {
			Key, Owner, Pipeline string
			Released             bool
		}
		want(t, "released", decodeLines[released](t, out)[0], released{"eval:orders:daily", "worker-7", "orders", true})
	}},
}

func TestJSON(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, h *harness) {
		for _, c := range jsonCases {
			t.Run(c.args, func(t *testing.T) {
				r := h.run(t, expand(append(words(c.args), "--json"), h, nil)...)
				if bytes.Contains([]byte(r.stdout), []byte("backend:")) {
					t.Errorf("--json printed the backend line:\n%s", r.stdout)
				}
				if r.code != exitOK {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				c.check(t, r.stdout)
			})
		}
	})
}
