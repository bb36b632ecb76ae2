package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/types"
)

// payload is what a hostile writer appends to every stored string, after
// printable text in other scripts that must come out as it is: a bidi override,
// invalid UTF-8, a line separator, DEL, C1 controls (CSI, NEL), line breaks and a
// tab, a clear-screen CSI, an OSC retitling the window, an OSC 8 hyperlink, a
// literal backslash escape, quotes and NUL. What a table cuts at 60 runes comes
// first.
const payload = "é漢字\u202eevil\u202c|\xff\xfe|\u2028|\x7f|\u009b31m|\u0085|\n\r\t|\x1b[2J|\x1b]0;title\x07|" +
	"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\|\\x1b|\"q\"|\x00"

// readable is the part of payload that human-readable output must show unchanged.
const readable = "é漢字"

// bad is a hostile value of a field.
func bad(field string) string { return field + payload }

// badMap is a hostile map (metadata, details, configs).
func badMap(field string) map[string]any {
	return map[string]any{bad(field + "-key"): bad(field + "-value"), "n": 1}
}

// Hostile records: every string field (IDs included, as a writer that goes around
// the library's validation could store them) carries payload.
var (
	hostileConfigs = []types.PipelineConfig{hostileConfig(1), hostileConfig(2)}
	hostileRuns    = []types.RunState{hostileRun(1), hostileRun(2)}
	hostileEvents  = []types.EventRecord{hostileEvent(1), hostileEvent(2), hostileEvent(3)}
	hostileLogs    = []types.RunLogEntry{hostileLog(1), hostileLog(2)}
	hostileReruns  = []types.RerunRecord{hostileRerun(1), hostileRerun(2)}
	hostileReplays = []types.ReplayRequest{hostileReplay(1), hostileReplay(2)}
	hostileLate    = []types.LateArrival{hostileLateArrival(1), hostileLateArrival(2)}
	hostileMarkers = []types.CascadeMarker{hostileMarker(1), hostileMarker(2)}
	hostileTraits  = []types.TraitEvaluation{hostileTrait(1), hostileTrait(2)}
	hostileReady   = types.ReadinessResult{PipelineID: bad("readiness-pipeline"), Status: types.ReadinessStatus(bad("readiness-status")),
		Traits: hostileTraits, Blocking: []string{bad("blocking1"), bad("blocking2")}, EvaluatedAt: at(21, 5, 46)}
	hostileLock  = types.LockInfo{Key: bad("lock-key"), Owner: bad("lock-owner")}
	hostileLease = types.LockInfo{Key: bad("lease-key"), Token: bad("lease-token"), Fence: 2, ExpiresAt: ptr(at(21, 7, 0))}
	hostileItems = []string{bad("item1"), bad("item2")}
)

func hostileConfig(i int) types.PipelineConfig {
	s := func(f string) string { return bad(fmt.Sprintf("%s%d", f, i)) }
	return types.PipelineConfig{
		ID: s("pipeline"), Archetype: s("archetype"), Tier: i,
		Traits: map[string]types.TraitConfig{s("trait"): {Evaluator: s("evaluator"), Required: true, TTL: time.Hour,
			Timeout: time.Minute, Config: badMap(s("trait-config"))}},
		Trigger:    &types.TriggerConfig{Type: s("trigger"), Config: badMap(s("trigger-config"))},
		Retry:      &types.RetryPolicy{MaxAttempts: 3, Backoff: time.Minute, MaxBackoff: time.Hour},
		SLA:        &types.SLAConfig{EvaluationDeadline: s("evaluation"), CompletionDeadline: s("completion"), Timezone: s("sla-tz")},
		Schedules:  []types.ScheduleConfig{{ID: s("schedule"), Cron: s("cron"), Time: s("time"), Timezone: s("tz")}},
		Exclusions: &types.ExclusionConfig{Weekends: true, Dates: []string{s("excluded")}},
		Downstream: []string{s("downstream")},
		Metadata:   badMap(s("metadata")),
	}
}

func hostileRun(i int) types.RunState {
	s := func(f string) string { return bad(fmt.Sprintf("%s%d", f, i)) }
	return types.RunState{RunID: s("run"), PipelineID: s("pipeline"), Status: types.RunStatus(s("status")), Version: 4,
		CreatedAt: at(21, 3, i), UpdatedAt: at(21, 4, i), Metadata: badMap(s("metadata"))}
}

func hostileEvent(i int) types.EventRecord {
	s := func(f string) string { return bad(fmt.Sprintf("%s%d", f, i)) }
	return types.EventRecord{StreamID: s("cursor"), Event: types.Event{Kind: s("kind"), PipelineID: s("pipeline"), RunID: s("run"),
		TraitType: s("trait"), Status: s("status"), Message: s("message"), Details: badMap(s("details")), Timestamp: at(21, 3, i)}}
}

func hostileLog(i int) types.RunLogEntry {
	s := func(f string) string { return bad(fmt.Sprintf("%s%d", f, i)) }
	return types.RunLogEntry{PipelineID: s("pipeline"), Date: s("date"), ScheduleID: s("schedule"), Status: types.RunStatus(s("status")),
		AttemptNumber: 2, RunID: s("run"), FailureMessage: s("failure"), FailureCategory: s("category"), AlertSent: true,
		RetryHistory: []types.RetryRecord{
			{Attempt: 1, RunID: s("retry-run-a"), Status: types.RunStatus(s("retry-status-a")), FailureMessage: s("retry-failure-a"), At: at(21, 3, 0)},
			{Attempt: 2, RunID: s("retry-run-b"), Status: types.RunStatus(s("retry-status-b")), FailureMessage: s("retry-failure-b"), At: at(21, 3, 30)},
		},
		StartedAt: at(21, 3, 0), CompletedAt: ptr(at(21, 4, 0)), UpdatedAt: at(21, 4, 0)}
}

func hostileRerun(i int) types.RerunRecord {
	s := func(f string) string { return bad(fmt.Sprintf("%s%d", f, i)) }
	return types.RerunRecord{RerunID: s("rerun"), PipelineID: s("pipeline"), OriginalDate: s("date"), OriginalRunID: s("original-run"),
		Reason: s("reason"), Description: s("description"), Status: types.RequestStatus(s("status")), RerunRunID: s("rerun-run"),
		RequestedAt: at(21, 4, i), CompletedAt: ptr(at(21, 5, i)), Metadata: badMap(s("metadata"))}
}

func hostileReplay(i int) types.ReplayRequest {
	s := func(f string) string { return bad(fmt.Sprintf("%s%d", f, i)) }
	return types.ReplayRequest{PipelineID: s("pipeline"), Date: s("date"), ScheduleID: s("schedule"), Reason: s("reason"),
		RequestedBy: s("by"), Status: types.RequestStatus(s("status")), CreatedAt: at(21, 5, i)}
}

func hostileLateArrival(i int) types.LateArrival {
	s := func(f string) string { return bad(fmt.Sprintf("%s%d", f, i)) }
	return types.LateArrival{PipelineID: s("pipeline"), Date: s("date"), ScheduleID: s("schedule"), DetectedAt: at(21, 1, i),
		RecordDelta: int64(i), TraitType: s("trait")}
}

func hostileMarker(i int) types.CascadeMarker {
	s := func(f string) string { return bad(fmt.Sprintf("%s%d", f, i)) }
	return types.CascadeMarker{PipelineID: s("pipeline"), ScheduleID: s("schedule"), Date: s("date"), Source: s("source"), WrittenAt: at(21, 4, i)}
}

func hostileTrait(i int) types.TraitEvaluation {
	s := func(f string) string { return bad(fmt.Sprintf("%s%d", f, i)) }
	return types.TraitEvaluation{PipelineID: s("pipeline"), TraitType: s("trait-type"), Status: types.TraitStatus(s("status")),
		Value: badMap(s("value")), Reason: s("reason"), FailureCategory: s("category"), EvaluatedAt: at(21, 5, i), ExpiresAt: ptr(at(21, 7, i))}
}

// errHostile is the error of a read that fails naming a stored key.
var errHostile = errors.New("record " + bad("corrupt-key") + " does not decode")

// hostileProvider answers every read the command makes with the hostile records;
// the rest is a memory provider's.
type hostileProvider struct {
	provider.Provider
	end func() // ends the command (its context), once a follow has yielded everything
}

func (hostileProvider) ListPipelines(context.Context) ([]types.PipelineConfig, error) {
	return hostileConfigs, nil
}

func (hostileProvider) GetPipeline(_ context.Context, id string) (*types.PipelineConfig, error) {
	if id == "corrupt" {
		return nil, errHostile
	}
	return &hostileConfigs[0], nil
}

func (hostileProvider) ListRuns(context.Context, string, int) ([]types.RunState, error) {
	return hostileRuns, nil
}

func (hostileProvider) GetRunState(context.Context, string) (*types.RunState, error) {
	return &hostileRuns[0], nil
}

func (hostileProvider) CompareAndSwapRunState(context.Context, string, int, types.RunState) (bool, error) {
	return true, nil
}

func (hostileProvider) ListEvents(context.Context, string, int) ([]types.Event, error) {
	return []types.Event{hostileEvents[0].Event, hostileEvents[1].Event}, nil
}

func (hostileProvider) ReadEventsSince(context.Context, string, string, int64) ([]types.EventRecord, error) {
	return hostileEvents[:2], nil
}

// FollowEvents yields the third hostile event, then ends the command.
func (p hostileProvider) FollowEvents(ctx context.Context, _, _ string) iter.Seq2[types.EventRecord, error] {
	return func(yield func(types.EventRecord, error) bool) {
		if !yield(hostileEvents[2], nil) {
			return
		}
		p.end()
		<-ctx.Done()
		yield(types.EventRecord{}, ctx.Err())
	}
}

func (hostileProvider) ListRunLogs(context.Context, string, int) ([]types.RunLogEntry, error) {
	return hostileLogs, nil
}

func (hostileProvider) GetRunLog(context.Context, string, string, string) (*types.RunLogEntry, error) {
	return &hostileLogs[0], nil
}

func (hostileProvider) ListReruns(context.Context, string, int) ([]types.RerunRecord, error) {
	return hostileReruns, nil
}

func (hostileProvider) ListAllReruns(context.Context, int) ([]types.RerunRecord, error) {
	return hostileReruns, nil
}

func (hostileProvider) ListReplays(context.Context, int) ([]types.ReplayRequest, error) {
	return hostileReplays, nil
}

func (hostileProvider) GetReplay(context.Context, string, string, string) (*types.ReplayRequest, error) {
	return &hostileReplays[0], nil
}

func (hostileProvider) ListLateArrivals(context.Context, string, string, string) ([]types.LateArrival, error) {
	return hostileLate, nil
}

func (hostileProvider) ListCascadeMarkers(context.Context, string, int) ([]types.CascadeMarker, error) {
	return hostileMarkers, nil
}

func (hostileProvider) GetTraits(context.Context, string) ([]types.TraitEvaluation, error) {
	return hostileTraits, nil
}

func (hostileProvider) GetReadiness(context.Context, string) (*types.ReadinessResult, error) {
	return &hostileReady, nil
}

func (hostileProvider) GetLockInfo(_ context.Context, key string) (*types.LockInfo, error) {
	if key == "lease" {
		return &hostileLease, nil
	}
	return &hostileLock, nil
}

// hostileBackend is the memory backend with a hostileProvider, and state stores
// holding hostile top-k items.
type hostileBackend struct {
	*memBackend
	end func()
}

func (b hostileBackend) provider(owner string, write bool) (provider.Provider, error) {
	p, err := b.memBackend.provider(owner, write)
	return hostileProvider{p, b.end}, err
}

// runHostile runs args in process against a hostileBackend.
func runHostile(t *testing.T, args ...string) result {
	t.Helper()
	mb := &memBackend{data: must(memprovider.New()), now: func() time.Time { return now }, stores: stores{
		int64sum:   must(memstate.New[int64](monoid.Sum[int64]{})),
		int64max:   must(memstate.New[int64](monoid.Max[int64]{})),
		float64sum: must(memstate.New[float64](monoid.Sum[float64]{})),
		hll:        must(memstate.New(monoid.Monoid[[]byte](hllM))),
		topk:       must(memstate.New(monoid.Monoid[[]byte](topkM))),
		bloom:      must(memstate.New(monoid.Monoid[[]byte](bloomM))),
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	delta := must(topkM.Delta(hostileItems[0], hostileItems[0], hostileItems[1]))
	if err := mb.stores.topk.MergeUpdate(ctx, mustKey("pages"), delta, 0); err != nil {
		t.Fatal(err)
	}
	if err := mb.stores.bloom.MergeUpdate(ctx, mustKey("urls"), bloomM.Delta(bad("member")), 0); err != nil {
		t.Fatal(err)
	}
	dial := func(context.Context, target, func() time.Time) (backend, error) {
		return hostileBackend{mb, cancel}, nil
	}
	return runInProcess(ctx, []string{envRedis + "=in-process"}, dial, args...)
}

// hostileCase is a command line on the hostile backend: how many lines its
// human-readable output has (the backend line included; 0: it fails, printing
// nothing on stdout), and the values its --json output prints, one a line.
type hostileCase struct {
	args  []string
	lines int
	json  []any
	check func(t *testing.T, stdout string) // instead of json
}

var hostileCases = []hostileCase{
	{args: words("pipelines list"), lines: 4, json: anys(hostileConfigs...)},
	{args: words("pipelines show p"), lines: 12, json: anys(hostileConfigs[0])},
	{args: words("pipelines show corrupt")},
	{args: words("runs p"), lines: 4, json: anys(hostileRuns...)},
	{args: words("run r"), lines: 8, json: anys(hostileRuns[0])},
	{args: words("run fail r --version 3 --reason stuck --yes")},
	{args: words("run fail r --version 4 --reason stuck --yes")}, // its pipeline ID cannot name an event log: nothing written
	{args: words("events p"), lines: 4, json: anys(hostileEvents[:2]...)},
	{args: words("events p --since c"), lines: 4, json: anys(hostileEvents[:2]...)},
	{args: words("events p --since c --limit 2"), lines: 5, json: anys(hostileEvents[:2]...)},
	{args: words("events p --follow"), lines: 4, json: anys(hostileEvents...)},
	{args: words("events p --follow --since c"), lines: 2, json: anys(hostileEvents[2])},
	{args: words("runlogs p"), lines: 4, json: anys(hostileLogs...)},
	{args: words("runlogs p --date d"), lines: 16, json: anys(hostileLogs[0])},
	{args: words("reruns p"), lines: 4, json: anys(hostileReruns...)},
	{args: words("reruns --all"), lines: 4, json: anys(hostileReruns...)},
	{args: words("replays"), lines: 4, json: anys(hostileReplays...)},
	{args: words("replays p --date d"), lines: 3, json: anys(hostileReplays[0])},
	{args: words("late p --date d"), lines: 4, json: anys(hostileLate...)},
	{args: words("markers p"), lines: 4, json: anys(hostileMarkers...)},
	{args: words("traits p"), lines: 5, json: anys(hostileTraits...)},
	{args: words("readiness p"), lines: 9, json: anys(hostileReady)},
	{args: words("lock show lock"), lines: 5, json: anys(lockJSON{hostileLock, "lock"})},
	{args: words("lock show lease"), lines: 6, json: anys(lockJSON{hostileLease, "lease"})},
	{args: words("state get topk --entity pages --prefix s"), lines: 8, check: func(t *testing.T, stdout string) {
		r := decodeLines[stateResult](t, stdout)[0]
		var got []string
		for _, it := range r.Items {
			got = append(got, it.Value)
		}
		if want := []string{coerced(hostileItems[0]), coerced(hostileItems[1])}; !reflect.DeepEqual(got, want) {
			t.Errorf("items %q, want %q", got, want)
		}
	}},
	{args: []string{"state", "get", "bloom", "--entity", "urls", "--prefix", "s", "--contains", bad("member"), "--contains", bad("other")},
		lines: 9, check: func(t *testing.T, stdout string) {
			r := decodeLines[stateResult](t, stdout)[0]
			if want := map[string]bool{coerced(bad("member")): true, coerced(bad("other")): false}; !reflect.DeepEqual(r.Contains, want) {
				t.Errorf("contains %v, want %v", r.Contains, want)
			}
		}},
}

func anys[T any](vs ...T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func mustKey(entity string) state.Key { return state.Key{Entity: entity} }

// TestStoredTextIsEscaped runs every read command, in every output mode, on a
// backend whose every stored string carries control characters, escape
// sequences, bidi overrides and invalid UTF-8: human-readable output must reach
// the terminal as printable text, one line per record, and --json output must
// parse back to the stored values (invalid UTF-8 replaced as encoding/json
// replaces it).
func TestStoredTextIsEscaped(t *testing.T) {
	t.Parallel()
	for _, c := range hostileCases {
		t.Run(strings.Join(c.args[:min(len(c.args), 3)], " "), func(t *testing.T) {
			t.Parallel()
			r := runHostile(t, c.args...)
			terminalSafe(t, "stdout", r.stdout)
			terminalSafe(t, "stderr", r.stderr)
			if c.lines == 0 {
				if r.code != exitError || r.stdout != "" || !strings.Contains(r.stderr, "pipestate ") {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and an error", r.code, r.stdout, r.stderr)
				}
				return
			}
			if r.code != exitOK {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if n := strings.Count(r.stdout, "\n"); n != c.lines || !strings.HasSuffix(r.stdout, "\n") {
				t.Errorf("%d lines, want %d (one per record):\n%s", n, c.lines, r.stdout)
			}
			if !strings.Contains(r.stdout, readable) {
				t.Errorf("the printable text %q of the values is not shown as it is:\n%s", readable, r.stdout)
			}
			t.Run("json", func(t *testing.T) {
				r := runHostile(t, append(c.args, "--json")...)
				terminalSafe(t, "stdout", r.stdout)
				terminalSafe(t, "stderr", r.stderr)
				if r.code != exitOK {
					t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
				}
				if c.check != nil {
					c.check(t, r.stdout)
					return
				}
				lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
				if len(lines) != len(c.json) {
					t.Fatalf("%d lines, want %d:\n%s", len(lines), len(c.json), r.stdout)
				}
				for i, line := range lines {
					got := reflect.New(reflect.TypeOf(c.json[i]))
					dec := json.NewDecoder(strings.NewReader(line))
					dec.DisallowUnknownFields()
					if err := dec.Decode(got.Interface()); err != nil {
						t.Fatalf("line %d %q: %v", i+1, line, err)
					}
					if want := roundTrip(t, c.json[i]); !reflect.DeepEqual(got.Elem().Interface(), want) {
						t.Errorf("line %d decodes to\n%#v\nwant\n%#v", i+1, got.Elem().Interface(), want)
					}
				}
			})
		})
	}
}

// terminalSafe fails t unless out is valid UTF-8 whose only control character is
// the newline ending its lines: no other C0 control (tab, CR, ESC, NUL...), no
// DEL, no C1 control, no format character (bidi overrides and embeddings), no
// line or paragraph separator.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s is not valid UTF-8: %q", what, out)
		return
	}
	for i, r := range out {
		if r == '\n' {
			continue
		}
		if r < 0x20 || r == 0x7f || (0x80 <= r && r <= 0x9f) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			t.Errorf("%s has %U at byte %d: %q", what, r, i, out)
			return
		}
	}
}

// roundTrip is v as encoding/json gives it back: invalid UTF-8 replaced by
// U+FFFD, numbers of maps float64.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := reflect.New(reflect.TypeOf(v))
	if err := json.Unmarshal(b, out.Interface()); err != nil {
		t.Fatal(err)
	}
	return out.Elem().Interface()
}

// coerced is s with each invalid byte replaced by U+FFFD, as encoding/json does.
func coerced(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// TestStoredEventIsEscaped is the reported case on every backend: an event whose
// kind, status, message and details carry the payload, appended while an
// operator follows the log, reaches the terminal as one printable line, as it
// does in the table, and --json gives its text back.
func TestStoredEventIsEscaped(t *testing.T) {
	t.Parallel()
	ev := types.Event{PipelineID: "orders", Kind: bad("kind"), RunID: "r-0005", Status: bad("status"), Message: bad("message"),
		Details: badMap("details"), Timestamp: at(21, 5, 59)}
	backends(t, func(t *testing.T, h *harness) {
		f := startFollow(t, h, h.dial, words("events orders --follow --limit 1")...)
		for _, want := range []string{"backend: " + h.line, "queued behind r-0003"} {
			if line := f.next(t); !strings.Contains(line, want) {
				t.Fatalf("line %q, want it to contain %q", line, want)
			}
		}
		if err := h.open(t, "").AppendEvent(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		line := f.next(t)
		terminalSafe(t, "the followed line", line)
		if !strings.HasPrefix(line, "2026-11-21T05:59:00Z ") || !strings.Contains(line, "kind"+readable) ||
			!strings.Contains(line, " run=r-0005 status=") || !strings.Contains(line, " cursor=") {
			t.Errorf("followed %q: want the event on one line, ending in its cursor", line)
		}
		if code := f.stop(); code != exitOK {
			t.Errorf("exit status %d after an interrupt, want 0", code)
		}

		r := h.run(t, words("events orders --limit 1")...)
		terminalSafe(t, "the table", r.stdout)
		if n := strings.Count(r.stdout, "\n"); r.code != exitOK || n != 3 || !strings.Contains(r.stdout, "kind"+readable) {
			t.Errorf("exit %d, %d lines, want 0 and 3:\n%s", r.code, n, r.stdout)
		}

		r = h.run(t, words("events orders --limit 1 --json")...)
		terminalSafe(t, "the JSON", r.stdout)
		got := decodeLines[types.EventRecord](t, r.stdout)
		if len(got) != 1 {
			t.Fatalf("%d events, want 1", len(got))
		}
		want := roundTrip(t, ev).(types.Event)
		if g := got[0].Event; g.Kind != want.Kind || g.Status != want.Status || g.Message != want.Message || !reflect.DeepEqual(g.Details, want.Details) {
			t.Errorf("--json printed\n%#v\nwant\n%#v", g, want)
		}
	})
}
