package memprovider_test

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/memorytest"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/providertest"
)

// plainProvider hides the optional interfaces of the memory backend.
type plainProvider struct{ provider.Provider }

// TestConformance runs the whole provider conformance suite on the memory backend,
// on a fake clock, then the groups that depend on an option or an optional
// interface with another one.
func TestConformance(t *testing.T) {
	b := memorytest.New()
	h := b.Harness(nil)
	providertest.Run(t, h)

	t.Run("short_readiness_ttl", func(t *testing.T) {
		short := h
		short.Open = func(t *testing.T) provider.Provider { return b.Open(t, memprovider.WithReadinessTTL(3*time.Second)) }
		short.ReadinessTTL = 3 * time.Second
		providertest.RunReadiness(t, short)
	})

	t.Run("without_optional_interfaces", func(t *testing.T) {
		plain := b.Harness(func(_ *testing.T, p *memprovider.Provider) provider.Provider { return plainProvider{p} })
		providertest.RunLeaser(t, plain)
		providertest.RunCascadeReader(t, plain)
		providertest.RunRunCreator(t, plain)
		providertest.RunEventFollower(t, plain)
		providertest.RunMarkerWatcher(t, plain)
		providertest.RunCascadeStore(t, plain)
		providertest.RunLifecycle(t, plain)
	})
}
