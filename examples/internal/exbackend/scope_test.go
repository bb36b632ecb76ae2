package exbackend

import (
	"context"
	"flag"
	"io"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// TestEndAfterDeadline: end removes what the run wrote even when the run's
// context has ended (a run that failed on its deadline).
func TestEndAfterDeadline(t *testing.T) {
	mr := miniredis.RunT(t)
	c := Config{Redis: mr.Addr(), Prefix: "ex"}
	end := c.Begin(flag.NewFlagSet("ex", flag.ContinueOnError))
	if err := mr.Set(c.Prefix+":k", "v"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := end(ctx, io.Discard); err != nil {
		t.Fatalf("end after the run's context ended: %v", err)
	}
	if mr.Exists(c.Prefix + ":k") {
		t.Errorf("key %s:k left after end", c.Prefix)
	}
}
