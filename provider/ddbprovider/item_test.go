package ddbprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/types"
)

// avItem is item as the encoding before 231892c wrote and read it: the same
// fields and tags, marshalled by attributevalue's reflection.
type avItem struct {
	PK     string `dynamodbav:"PK"`
	SK     string `dynamodbav:"SK"`
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"`
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"`
	// The index ACTIVE's key (added after 231892c, encoded by the same rule).
	ActivePK string  `dynamodbav:"activePK,omitempty"`
	ActiveSK string  `dynamodbav:"activeSK,omitempty"`
	Data     *avBody `dynamodbav:"data,omitempty"`
	Exp      int64   `dynamodbav:"exp,omitempty"`
	TTL      int64   `dynamodbav:"ttl,omitempty"`
	ListPK   string  `dynamodbav:"listPK,omitempty"`
	ListSK   string  `dynamodbav:"listSK,omitempty"`
	Version  *int    `dynamodbav:"version,omitempty"`
	Seq      int64   `dynamodbav:"seq,omitempty"`
	Holder   string  `dynamodbav:"holder,omitempty"`
	Fence    int64   `dynamodbav:"fence,omitempty"`
	Tok      string  `dynamodbav:"tok,omitempty"`
}

// avBody is body with the attributevalue methods it had before 231892c.
type avBody body

func (b *avBody) MarshalDynamoDBAttributeValue() (ddbtypes.AttributeValue, error) {
	return (*body)(b).attr(), nil
}

func (b *avBody) UnmarshalDynamoDBAttributeValue(av ddbtypes.AttributeValue) error {
	return (*body)(b).set(av)
}

func toAV(it item) avItem {
	a := avItem{PK: it.PK, SK: it.SK, GSI1PK: it.GSI1PK, GSI1SK: it.GSI1SK, ActivePK: it.ActivePK, ActiveSK: it.ActiveSK, Exp: it.Exp, TTL: it.TTL,
		ListPK: it.ListPK, ListSK: it.ListSK, Version: it.Version, Seq: it.Seq, Holder: it.Holder, Fence: it.Fence, Tok: it.Tok}
	if it.Data != nil {
		a.Data = (*avBody)(it.Data)
	}
	return a
}

func fromAV(a avItem) item {
	it := item{PK: a.PK, SK: a.SK, GSI1PK: a.GSI1PK, GSI1SK: a.GSI1SK, ActivePK: a.ActivePK, ActiveSK: a.ActiveSK, Exp: a.Exp, TTL: a.TTL,
		ListPK: a.ListPK, ListSK: a.ListSK, Version: a.Version, Seq: a.Seq, Holder: a.Holder, Fence: a.Fence, Tok: a.Tok}
	if a.Data != nil {
		it.Data = (*body)(a.Data)
	}
	return it
}

// fidelityItems are items of every shape the provider writes, with extreme values.
func fidelityItems(t *testing.T) []item {
	t.Helper()
	enc := func(v any) *body {
		b, err := encode(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	zero, top, neg := 0, math.MaxInt, -1
	long := strings.Repeat("é", 200)
	z := enc(map[string]string{"k": strings.Repeat("\x01", 1000)})
	z.compress()
	if z.z == nil {
		t.Fatal("compress left a compressible body as text")
	}
	at := time.Date(2026, 11, 21, 6, 0, 0, 123456789, time.UTC)
	var its []item
	runTruth, runList, err := runItems(types.RunState{RunID: "r" + long, PipelineID: "p☃", Status: types.RunPending, CreatedAt: at, UpdatedAt: at}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	rerunTruth, rerunList, err := rerunItems(types.RerunRecord{RerunID: "x", PipelineID: "p", OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	its = append(its, runTruth, runList, rerunTruth, rerunList,
		item{PK: "P", SK: "S"},
		item{PK: "P", SK: "S", Data: enc(nil)},
		item{PK: "P", SK: "S", Data: &body{}},
		item{PK: "P", SK: "S", Data: z},
		item{PK: "P", SK: "S", Version: &zero},
		item{PK: "P", SK: "S", Version: &top},
		item{PK: "P", SK: "S", Version: &neg},
		item{PK: "LOCK#k", SK: skLock, Holder: "lease:t", Tok: "t", Fence: math.MaxInt64, Exp: math.MaxInt64},
		item{PK: "LOCK#k", SK: skLock, Fence: 7},
		item{PK: "P", SK: eventSK(math.MaxInt64), Seq: math.MaxInt64, Exp: math.MinInt64 + 1, TTL: -1},
		item{PK: "P", SK: "S", GSI1PK: "G", GSI1SK: "g", ListPK: "L", ListSK: "l", Exp: 1, TTL: 1, Seq: 1, Holder: "h", Fence: 1, Tok: "t", Data: enc(types.Event{Kind: "k", Timestamp: at})},
	)
	for i := range its { // every other item without an expiry gets one
		if its[i].Exp == 0 && i%2 == 0 {
			its[i].setExpiry(at)
		}
	}
	return its
}

// TestItemEncodingMatchesAttributevalue checks the hand-written encoding against the
// attributevalue one it replaced (231892c): every item is the same attribute map,
// and unmarshal reads the map attributevalue wrote as attributevalue read it, so
// items written before the change read the same.
func TestItemEncodingMatchesAttributevalue(t *testing.T) {
	for i, it := range fidelityItems(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			old, err := attributevalue.MarshalMap(toAV(it))
			if err != nil {
				t.Fatal(err)
			}
			got, err := marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, old) {
				t.Fatalf("attrs\n%s\nattributevalue wrote\n%s", showAttrs(got), showAttrs(old))
			}
			var want avItem
			if err := attributevalue.UnmarshalMap(old, &want); err != nil {
				t.Fatal(err)
			}
			read, err := unmarshal(old)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(read, fromAV(want)) {
				t.Fatalf("unmarshal\n%+v\nattributevalue read\n%+v", read, fromAV(want))
			}
			if it.Data != nil && read.Data.text != it.Data.text {
				t.Fatalf("data %q, want %q", read.Data.text, it.Data.text)
			}
		})
	}
}

// TestUnmarshalIgnoresUnknownAttributes: attributes the item does not know (TTL
// bookkeeping by other tools, future fields) are skipped, as attributevalue did.
func TestUnmarshalIgnoresUnknownAttributes(t *testing.T) {
	av := map[string]ddbtypes.AttributeValue{
		attrPK: sv("P"), attrSK: sv("S"), "extra": &ddbtypes.AttributeValueMemberBOOL{Value: true}, "n": nv(3),
	}
	it, err := unmarshal(av)
	if err != nil || it.PK != "P" || it.SK != "S" {
		t.Fatalf("unmarshal = %+v, %v", it, err)
	}
}

// TestRecordsRoundTrip puts every record type through encode, marshal, unmarshal and
// decodeData: the result is what a JSON round trip gives, to the nanosecond, with
// numbers, empty and nil maps, unicode and a body large enough to be compressed.
func TestRecordsRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 21, 6, 0, 0, 123456789, time.FixedZone("X", 5*3600+1800))
	exp := at.Add(time.Nanosecond)
	big := strings.Repeat("\x02☃", 150_000) // escaped, well over an item as text
	meta := map[string]any{"int": 9007199254740993, "float": 1.5e-300, "negzero": math.Copysign(0, -1), "nested": map[string]any{}, "nil": nil, "s": "<&>"}
	for _, tc := range []struct {
		name string
		v    any
		dec  func([]byte) (any, error)
	}{
		{"run", types.RunState{RunID: strings.Repeat("r", 255), PipelineID: "p☃", Status: types.RunRunning, Version: 3, CreatedAt: at, UpdatedAt: exp, Metadata: meta}, decodeAs[types.RunState]},
		{"run empty metadata", types.RunState{RunID: "r", PipelineID: "p", Metadata: map[string]any{}}, decodeAs[types.RunState]},
		{"event", types.Event{Kind: "k", PipelineID: "p", Message: big, Timestamp: at, Details: meta}, decodeAs[types.Event]},
		{"trait", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass, EvaluatedAt: at, ExpiresAt: &exp, Value: meta}, decodeAs[types.TraitEvaluation]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			wantV, err := tc.dec(want)
			if err != nil {
				t.Fatal(err)
			}
			data, err := encode(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			av, err := marshal(item{PK: "P", SK: "S", Data: data})
			if err != nil {
				t.Fatal(err)
			}
			if n := ddbx.ItemSize(av); n > ddbx.MaxItemSize {
				t.Fatalf("item of %d bytes", n)
			}
			it, err := unmarshal(av)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.dec([]byte(it.Data.text))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantV) {
				t.Fatalf("read back\n%+v\nwant\n%+v", got, wantV)
			}
		})
	}
}

// showAttrs prints an attribute map with its values (not their pointers).
func showAttrs(av map[string]ddbtypes.AttributeValue) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(av)) {
		fmt.Fprintf(&b, "%s=%T(%v) ", name, av[name], reflect.ValueOf(av[name]).Elem().FieldByName("Value"))
	}
	return b.String()
}

func decodeAs[T any](b []byte) (any, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// TestEncodeConcurrent encodes values of very different sizes from many goroutines,
// failed encodings among them: each result is exactly its own value's JSON (the
// pooled buffers leak nothing between calls).
func TestEncodeConcurrent(t *testing.T) {
	const workers, rounds = 16, 100
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			<-start
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range rounds {
				if i%7 == 0 {
					if _, err := encode(map[string]any{"bad": math.NaN(), "pad": strings.Repeat("x", r.IntN(100))}); err == nil {
						errs <- fmt.Errorf("NaN encoded")
						return
					}
					continue
				}
				size := r.IntN(2000)
				if i%10 == 0 { // over maxPooledBuffer at times
					size = r.IntN(100_000)
				}
				v := map[string]any{"w": w, "i": i, "s": strings.Repeat("<", size)}
				b, err := encode(v)
				if err != nil {
					errs <- err
					return
				}
				var want bytes.Buffer
				e := json.NewEncoder(&want)
				e.SetEscapeHTML(false)
				_ = e.Encode(v)
				if b.text != strings.TrimSuffix(want.String(), "\n") {
					errs <- fmt.Errorf("worker %d round %d: %d bytes, want %d", w, i, len(b.text), want.Len()-1)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
