package observe_test

import (
	"testing"

	"github.com/pipestate/pipestate/internal/testkit/memorytest"
	"github.com/pipestate/pipestate/observe"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/providertest"
)

// TestConformance runs the provider suite through the decorator, recording into an
// SDK: decorating changes no behaviour, optional interfaces included.
func TestConformance(t *testing.T) {
	r := newRig(t)
	providertest.Run(t, memorytest.New().Harness(func(t *testing.T, p *memprovider.Provider) provider.Provider {
		o, err := observe.Provider(p, r.opts...)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}))
}
