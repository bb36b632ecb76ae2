package dynamodb_test

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
			if w.method == "PutLateArrival" && (len(unfenced) != 1 || !strings.HasPrefix(unfenced[0], "PutItem ")) {
				t.Errorf("unfenced PutLateArrival sent %q, want one PutItem", unfenced)
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
