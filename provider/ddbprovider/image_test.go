package ddbprovider

import (
	"errors"
	"reflect"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider/internal/itemimage"
	"github.com/pipestate/pipestate/types"
)

// TestImageKind: every key shape of the key schema (package doc) is the kind
// package ddbstream reports, and keys of other shapes are foreign.
func TestImageKind(t *testing.T) {
	for _, c := range []struct {
		pk, sk string
		want   itemimage.Kind
	}{
		{"PIPELINE#p", "CONFIG", itemimage.Other},
		{"PIPELINE#p", "TRAIT#fresh", itemimage.Other},
		{"PIPELINE#p", "READINESS", itemimage.Other},
		{"RUN#r", "STATE", itemimage.Run},
		{"PIPELINE#p", "RUN#0000000000000000#00000000#r", itemimage.Other},
		{"PIPELINE#p", "RUNLOG#2026-11-28#daily", itemimage.Other},
		{"PIPELINE#p", "EVENT#00000000000000000001", itemimage.Event},
		{"PIPELINE#p", "EVENTSEQ", itemimage.Other},
		{"RERUN#x", "STATE", itemimage.Rerun},
		{"PIPELINE#p", "RERUN#0000000000000000#00000000#x", itemimage.Other},
		{"PIPELINE#p", "REPLAY#2026-11-28#daily", itemimage.Replay},
		{"PIPELINE#p", "LATE#2026-11-28#daily#0#s", itemimage.Other},
		{"PIPELINE#p", "FENCE#LATE#2026-11-28#daily", itemimage.Other},
		{"MARKER#p", "2026-11-28#daily", itemimage.Marker},
		{"MARKER#p", "#BYTIME#0000000000000000#00000000#2026-11-28#daily", itemimage.Other},
		{"MARKERLOG", "ENTRY#00000000000000000001", itemimage.Other},
		{"MARKERLOG", "SEQ", itemimage.Other},
		{"LOCK#k", "LOCK", itemimage.Lock},
		// Not ours.
		{"USER#u", "PROFILE", itemimage.Foreign},
		{"PIPELINE#p", "INVOICE#1", itemimage.Foreign},
		{"PIPELINE#", "CONFIG", itemimage.Foreign},
		{"RUN#", "STATE", itemimage.Foreign},
		{"RUN#r", "AUDIT", itemimage.Foreign},
		{"LOCK#k", "STATE", itemimage.Foreign},
		{"MARKER#p", "no-schedule", itemimage.Foreign},
		{"MARKER#p", "#2026", itemimage.Foreign},
		{"MARKERLOG", "OTHER", itemimage.Foreign},
		{"PIPELINE#p", "EVENT#x", itemimage.Foreign}, // no log entry: the log's reads skip it
		{"PIPELINE#p", "EVENT#0000000000000000000x", itemimage.Foreign},
		{"PIPELINE#p", "ENTRY#00000000000000000001", itemimage.Foreign},
		{"MARKERLOG", "ENTRY#x", itemimage.Foreign},
		{"MARKERLOG", "EVENT#00000000000000000001", itemimage.Foreign},
		{"", "", itemimage.Foreign},
	} {
		if got, _ := imageKind(c.pk, c.sk); got != c.want {
			t.Errorf("imageKind(%q, %q) = %v, want %v", c.pk, c.sk, got, c.want)
		}
	}
}

// TestClassifyKeysOnly: Classify reads the key alone, so a key of one of the
// backend's kinds (which Decode fails on: no data) classifies without error,
// and a key without string PK and SK is ErrInvalidArgument.
func TestClassifyKeysOnly(t *testing.T) {
	key := map[string]ddbtypes.AttributeValue{attrPK: sv("PIPELINE#p"), attrSK: sv(eventSK(1))}
	got, err := itemimage.Classify("tbl", key)
	if err != nil || got.Kind != itemimage.Event || got.Name != "dynamodb table tbl item PIPELINE#p "+eventSK(1) || got.Value != nil {
		t.Errorf("Classify(event key) = %+v, %v; want an event, named, no value", got, err)
	}
	if _, err := itemimage.Decode("tbl", key); !errors.Is(err, provider.ErrCorrupt) {
		t.Errorf("Decode(event key only) = %v; want ErrCorrupt (the test's premise)", err)
	}
	if _, err := itemimage.Classify("tbl", map[string]ddbtypes.AttributeValue{attrPK: sv("PIPELINE#p")}); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("Classify(no SK) = %v; want ErrInvalidArgument", err)
	}
}

// TestImageRunActiveKey: a run's truth item decodes to the same run whether it
// carries its key in the index ACTIVE (unfinished) or not (finished), and one
// whose index key is not its own is corrupt, as the provider's reads find it.
func TestImageRunActiveKey(t *testing.T) {
	for _, status := range []types.RunStatus{types.RunRunning, types.RunCompleted} {
		r := types.RunState{RunID: "r-1", PipelineID: "p", Status: status, CreatedAt: time.Unix(5, 0).UTC(), UpdatedAt: time.Unix(6, 0).UTC()}
		truth, _, err := runItems(r, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		av, err := marshal(truth)
		if err != nil {
			t.Fatal(err)
		}
		if _, has := av[attrActPK]; has != !status.Terminal() {
			t.Fatalf("%s run: index key stored %v, want %v", status, has, !status.Terminal())
		}
		got, err := itemimage.Decode("tbl", av)
		if err != nil || got.Kind != itemimage.Run || !reflect.DeepEqual(got.Value, &r) {
			t.Errorf("Decode(%s run) = %+v, %v; want the run", status, got, err)
		}
		if status.Terminal() {
			continue
		}
		av[attrActSK] = sv("r-2")
		av[attrActPK] = sv(activeShard("r-2"))
		if got, err := itemimage.Decode("tbl", av); !errors.Is(err, provider.ErrCorrupt) || got.Kind != itemimage.Run {
			t.Errorf("Decode(run with another run's index key) = %+v, %v; want a corrupt run", got, err)
		}
	}
}
