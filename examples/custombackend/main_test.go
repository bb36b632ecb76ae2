package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "demo.db")); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	want := []string{
		"B lists 1: orders",
		"A acquires=true, B acquires=false, B release: sqlite: release lock \"eval:orders:daily\": pipestate: lock not held",
		"A and B both CAS from version 0, 1 wins",
		"A reads COMPLETED at version 3",
		"events page 1: RUN_STATE_CHANGED RUNNING",
		"events page 2: RUN_STATE_CHANGED COMPLETED",
		"A fence=1; B while A holds it: held=true; B after release: fence=2",
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q\noutput:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), "events page 3") {
		t.Errorf("more event pages than events\noutput:\n%s", out.String())
	}
}
