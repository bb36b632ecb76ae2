package ddbprovider_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// recorder is an http.RoundTripper that keeps the operation and body of every
// request while on.
type recorder struct {
	mu   sync.Mutex
	on   bool
	reqs []string // "Op body"
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		op := req.Header.Get("X-Amz-Target")
		op = op[strings.LastIndexByte(op, '.')+1:]
		r.mu.Lock()
		if r.on {
			r.reqs = append(r.reqs, op+" "+string(body))
		}
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// take returns the requests recorded since the last take and goes on recording
// when on.
func (r *recorder) take(on bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs, r.on = nil, on
	return out
}

// TestUnfencedAfterFenced: an unfenced write of a record that fenced writes
// wrote sends no fence (no fence name, value or condition: its request is what
// it was before fencing) and neither checks nor resets what the record
// remembers: the item keeps its fence attributes, and an older fence is still
// refused after it. Every fenced write is covered.
func TestUnfencedAfterFenced(t *testing.T) {
	rec := &recorder{}
	e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = &http.Client{Transport: rec} })
	p := openOn(t, e.client, e)
	ctx := context.Background()
	now := e.clock.Now()
	const lease = "orders"
	for _, w := range fencedLostWrites(ctx, p, now) {
		t.Run(w.method, func(t *testing.T) {
			id := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
			if w.pre != nil {
				mustNil(t, w.pre(id))
			}
			fp := func(f int64) provider.Provider {
				fp, err := provider.Fenced(p, types.Lease{Key: lease + id, Token: "t", Fence: f})
				mustNil(t, err)
				return fp
			}
			rec.take(true)
			mustNil(t, w.write(fp(5), id, 1))
			fencedReqs := rec.take(true)
			if !anyContains(fencedReqs, `"f:`+lease+id+`"`) {
				t.Errorf("the fenced write's requests name no fence attribute: %q", fencedReqs)
			}
			// The unfenced write: its i is 1 again for a create (which then finds
			// the run), 2 for a CAS (the next version), else 2.
			i := 2
			if w.method == "CreateRunState" {
				i = 1
			}
			err := w.write(p, id, i)
			unfenced := rec.take(false)
			if w.method == "CreateRunState" {
				if err == nil || err.Error() != "not created" {
					t.Fatalf("unfenced create of an existing run: %v, want not created", err)
				}
			} else {
				mustNil(t, err)
			}
			for _, r := range unfenced {
				if strings.Contains(r, "#f\"") || strings.Contains(r, "f:"+lease) || strings.Contains(r, ":fence") {
					t.Errorf("the unfenced write sent a fence: %s", r)
				}
			}
			if w.method == "PutLateArrival" && (len(unfenced) != 1 || !strings.HasPrefix(unfenced[0], "TransactWriteItems ")) {
				t.Errorf("unfenced PutLateArrival sent %q, want one TransactWriteItems (its record and the list's guard)", unfenced)
			}
			// The record still remembers fence 5: fence 4 is refused, 5 passes.
			if err := w.write(fp(4), id, 3); !errors.Is(err, provider.ErrFenced) {
				t.Errorf("fenced 4 after fenced 5 and an unfenced write: err %v, want ErrFenced", err)
			}
			if w.method == "CompareAndSwapRunState" {
				i = 3
			} else {
				i = 1
			}
			if err := w.write(fp(5), id, i); err != nil && (w.method != "CreateRunState" || err.Error() != "not created") {
				t.Errorf("fenced 5 after the unfenced write: %v", err)
			}
		})
	}
	// The run's item holds its fence attribute, which reads ignore.
	out, err := e.client.GetItem(ctx, &ddb.GetItemInput{TableName: &e.table,
		Key: map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "RUN#r-TestUnfencedAfterFenced-PutRunState"},
			"SK": &ddbtypes.AttributeValueMemberS{Value: "STATE"}}})
	mustNil(t, err)
	if n, ok := out.Item["f:"+lease+"TestUnfencedAfterFenced-PutRunState"].(*ddbtypes.AttributeValueMemberN); !ok || n.Value != "5" {
		t.Errorf("the run's item: fence attribute %v, want 5", out.Item["f:"+lease+"TestUnfencedAfterFenced-PutRunState"])
	}
}

func anyContains(reqs []string, s string) bool {
	for _, r := range reqs {
		if strings.Contains(r, s) {
			return true
		}
	}
	return false
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLostReplyTakeover: a fenced write whose reply is lost while a newer fence
// writes the record before the SDK's retry. A transaction's retry carries the
// first attempt's idempotency token, so it reports the first attempt's success
// (the newer write stays); a single-item update (PutRunLog, PutReplay) has no
// such token, and its retry is refused: ErrFenced, though its first attempt
// landed before the newer write superseded it (see Fencing in the package doc).
func TestLostReplyTakeover(t *testing.T) {
	ft := faults.NewTransport()
	e := faultEnv(t, ft, 3)
	p := openOn(t, e.client, e)
	other := openOn(t, e.client, e)
	ctx := context.Background()
	run := func(i int) types.RunState {
		return types.RunState{RunID: "r1", PipelineID: "p1", Status: types.RunPending, CreatedAt: e.clock.Now(), Metadata: map[string]any{"i": i}}
	}
	ft.DropReplyThen(faults.Op("TransactWriteItems", `"#f"`), func() {
		mustNil(t, fencedBy(t, other, "x", 6).PutRunState(ctx, run(6)))
	})
	mustNil(t, fencedBy(t, p, "x", 5).PutRunState(ctx, run(5)))
	if r, err := p.GetRunState(ctx, "r1"); err != nil || r == nil || r.Metadata["i"] != float64(6) {
		t.Fatalf("run %+v, %v; want the newer write's", r, err)
	}
	log := func(i int) types.RunLogEntry {
		return types.RunLogEntry{PipelineID: "p1", Date: "2026-01-01", Status: types.RunRunning, AttemptNumber: i}
	}
	ft.DropReplyThen(faults.Op("UpdateItem", `"#f"`), func() {
		mustNil(t, fencedBy(t, other, "x", 6).PutRunLog(ctx, log(6)))
	})
	if err := fencedBy(t, p, "x", 5).PutRunLog(ctx, log(5)); !errors.Is(err, provider.ErrFenced) {
		t.Fatalf("PutRunLog: %v, want ErrFenced", err)
	}
	if l, err := p.GetRunLog(ctx, "p1", "2026-01-01", ""); err != nil || l == nil || l.AttemptNumber != 6 {
		t.Fatalf("run log %+v, %v; want the newer write's", l, err)
	}
}
