package redisprovider

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/types"
)

// newSignalled returns a provider on a fresh miniredis, not started, that
// records its signals into sig, and its client.
func newSignalled(t *testing.T, sig *signaltest.Signals) (*Provider, *goredis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	p, err := New(c, WithKeyPrefix("sig"), WithMeterProvider(sig.Meter), WithLogger(sig.Log))
	must(t, err)
	return p, c
}

var redisSystem = attribute.String("db.system.name", "redis")

// TestSignalsScriptLoad: a script the server does not hold (the first run, and the
// first after SCRIPT FLUSH) is sent again with EVAL and recorded, alone and in a
// pipeline. Only on miniredis: flushing a shared server's scripts would add round
// trips to other tests.
func TestSignalsScriptLoad(t *testing.T) {
	sig := signaltest.NewSignals()
	p, c := newSignalled(t, sig)
	ctx := t.Context()
	rerun := types.RerunRecord{RerunID: "x", PipelineID: "pipe", OriginalDate: "2026-01-01", Status: types.RequestPending}
	steps := []struct {
		name  string
		do    func() error
		loads int64
	}{
		{"first run log list", func() error { _, err := p.ListRunLogs(ctx, "pipe", 1); return err }, 1},
		{"second run log list", func() error { _, err := p.ListRunLogs(ctx, "pipe", 1); return err }, 1},
		{"flush", func() error { return c.ScriptFlush(ctx).Err() }, 1},
		{"run log list after the flush", func() error { _, err := p.ListRunLogs(ctx, "pipe", 1); return err }, 2},
		// Two provisional entries in one pipeline, the truth, then two final
		// steps of the script already reloaded and two reads of the lists'
		// expired records (idx_expired), in the same pipeline.
		{"first rerun put", func() error { return p.PutRerun(ctx, rerun) }, 7},
		{"second rerun put", func() error { return p.PutRerun(ctx, rerun) }, 7},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := sig.Collect(t, "pipestate.redis.script.loads", redisSystem).Value; got != st.loads {
			t.Errorf("after %s: %d script loads recorded, want %d", st.name, got, st.loads)
		}
	}
	if n := sig.Logs(slog.LevelDebug, "pipestate: script reloaded after NOSCRIPT"); n != 7 {
		t.Errorf("%d reload records logged, want 7:\n%s", n, sig.LogText())
	}
}

// TestSignalsRepair: a listing that drops the entry of a lost truth records one
// repair; one that moves an entry to its truth's member records a repair and its
// re-read as a retry (reason index_repair).
func TestSignalsRepair(t *testing.T) {
	sig := signaltest.NewSignals()
	p, c := newSignalled(t, sig)
	ctx := t.Context()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"r1", "r2"} {
		must(t, p.PutRunState(ctx, run("pipe", id, at)))
	}
	list := p.k.runs("pipe").z
	repairs := func() int64 {
		return sig.Collect(t, "pipestate.redis.index.repairs", redisSystem).Value
	}
	retryAttrs := []attribute.KeyValue{redisSystem, attribute.String("db.operation.name", "list runs"),
		signal.AttrReason.String(signal.ReasonIndexRepair)}
	retries := func() int64 { return sig.Collect(t, "pipestate.retries", retryAttrs...).Value }

	if _, err := p.ListRuns(ctx, "pipe", 10); err != nil || repairs() != 0 || retries() != 0 {
		t.Fatalf("a listing of a sound index: %v, %d repairs, %d retries recorded", err, repairs(), retries())
	}
	must(t, c.Del(ctx, p.k.run("r1")).Err()) // e.g. evicted
	if ids := listRunIDs(t, p, "pipe"); len(ids) != 1 || repairs() != 1 || retries() != 0 {
		t.Errorf("listing without r1's truth: %v, %d repairs, %d retries recorded; want [r2], 1, 0", ids, repairs(), retries())
	}
	// r2's truth moves to a later CreatedAt without its final step (a crash).
	later := at.Add(time.Hour)
	data, err := p.encode(run("pipe", "r2", later))
	must(t, err)
	key := p.k.run("r2")
	must(t, lua(scriptRecordPut).Run(ctx, c, []string{key, p.k.call(key, "n")}, ids.TimeKey(later)+"r2", data, "pipe", "strict", 1000, 0, 0, 0,
		"v", 0, "c", later.Format(time.RFC3339Nano), "", "").Err())
	if ids := listRunIDs(t, p, "pipe"); len(ids) != 1 || repairs() != 2 || retries() != 1 {
		t.Errorf("listing a moved entry: %v, %d repairs, %d retries recorded; want [r2], 2, 1", ids, repairs(), retries())
	}
	if n := sig.Logs(slog.LevelInfo, "pipestate: repaired list entries"); n != 2 {
		t.Errorf("%d repair records logged, want 2:\n%s", n, sig.LogText())
	}
	if n := sig.Logs(slog.LevelDebug, "pipestate: retry"); n != 1 {
		t.Errorf("%d retry records logged, want 1:\n%s", n, sig.LogText())
	}
	if text := sig.LogText(); !strings.Contains(text, list) {
		t.Errorf("the repair records do not name the list %s:\n%s", list, text)
	}
}
