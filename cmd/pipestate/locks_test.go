package main

import (
	"context"
	"strings"
	"testing"
)

// TestLockShowWithoutInspector: on a provider that is no provider.LockInspector,
// lock show is an error (exit 1) that says so.
func TestLockShowWithoutInspector(t *testing.T) {
	t.Parallel()
	h := memoryHarness(t)
	r := runInProcess(context.Background(), h.env, withoutFollower(h.dial), "lock", "show", "eval:orders:daily")
	if r.code != exitError || r.stdout != "" || !strings.Contains(r.stderr, "does not implement provider.LockInspector") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 naming provider.LockInspector", r.code, r.stdout, r.stderr)
	}
}
