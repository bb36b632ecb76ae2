package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/pipestate/pipestate/provider/memory"
)

func TestQuickstartTranscript(t *testing.T) {
	p, err := memory.New(memory.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), &out, p); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	want := `registered pipeline orders
trait freshness: PASS
trait row-count: PASS
took lock eval:orders:daily
run orders-2026-11-21 -> RUNNING (version 1)
run orders-2026-11-21 -> COMPLETED (version 2)
stale compare-and-swap from version 0 rejected
released lock eval:orders:daily
event RUN_STATE_CHANGED RUNNING
event RUN_STATE_CHANGED COMPLETED
`
	if out.String() != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", out.String(), want)
	}
}
