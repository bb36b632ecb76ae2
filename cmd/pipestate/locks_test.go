package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
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

// failingPipelines is a provider whose GetPipeline fails.
type failingPipelines struct {
	provider.Provider
	err error
}

func (f failingPipelines) GetPipeline(context.Context, string) (*types.PipelineConfig, error) {
	return nil, f.err
}

// TestLockPipelineReadFails: when reading a pipeline the lock key names fails
// (a corrupt pipeline record), lock release without --pipeline fails with that
// error, naming the pipeline and saying that --pipeline skips the lookup.
func TestLockPipelineReadFails(t *testing.T) {
	t.Parallel()
	_, err := lockPipeline(context.Background(), failingPipelines{err: provider.ErrCorrupt}, "sched:orders")
	if !errors.Is(err, provider.ErrCorrupt) || !strings.Contains(err.Error(), `pipeline "sched"`) || !strings.Contains(err.Error(), "give --pipeline") {
		t.Errorf("lockPipeline = %v, want an error wrapping ErrCorrupt that names the pipeline and --pipeline", err)
	}
}
