package redisprovider_test

import (
	"testing"

	"github.com/pipestate/pipestate/providertest"
)

// TestConformance runs the whole provider conformance suite on miniredis (with a
// fake clock), on the real server in REDIS_ADDR and on the cluster in
// REDIS_CLUSTER_ADDRS (each skipped without its server).
func TestConformance(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		providertest.Run(t, newMiniHarness().harness())
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		h := newServerHarness(realClient(t))
		providertest.Run(t, h.harness())
		providertest.RunRetention(t, h.retentionHarness())
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		h := newServerHarness(clusterClient(t))
		providertest.Run(t, h.harness())
		providertest.RunRetention(t, h.retentionHarness())
	})
}
