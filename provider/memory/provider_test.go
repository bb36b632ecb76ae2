package memory_test

import (
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/memorytest"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memory"
)

// TestNewRejectsBadOptions passes a nil option and each bad option value to New and
// NewHandle: an error wrapping ErrInvalidArgument, never a panic.
func TestNewRejectsBadOptions(t *testing.T) {
	base, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  memory.Option
	}{
		{"nil_option", nil},
		{"nil_clock", memory.WithClock(nil)},
		{"empty_owner", memory.WithOwner("")},
		{"zero_readiness_ttl", memory.WithReadinessTTL(0)},
		{"negative_readiness_ttl", memory.WithReadinessTTL(-time.Second)},
		{"readiness_ttl_over_max", memory.WithReadinessTTL(provider.MaxTTL + 1)},
		{"negative_retention", memory.WithEventRetention(-time.Second)},
		{"retention_over_max", memory.WithEventRetention(provider.MaxTTL + 1)},
		{"negative_marker_retention", memory.WithMarkerLogRetention(-time.Second)},
		{"marker_retention_over_max", memory.WithMarkerLogRetention(provider.MaxTTL + 1)},
		{"negative_run_retention", memory.WithRetention(provider.Retention{Runs: -time.Nanosecond})},
		{"replay_retention_over_max", memory.WithRetention(provider.Retention{Replays: provider.MaxTTL + 1})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := memory.New(tc.opt); !errors.Is(err, provider.ErrInvalidArgument) {
				t.Errorf("New = %v, %v; want ErrInvalidArgument", p, err)
			}
			if p, err := base.NewHandle(tc.opt); !errors.Is(err, provider.ErrInvalidArgument) {
				t.Errorf("NewHandle = %v, %v; want ErrInvalidArgument", p, err)
			}
		})
	}
	p, err := memory.New(memory.WithOwner("me"), memory.WithReadinessTTL(provider.MaxTTL), memory.WithEventRetention(provider.MaxTTL),
		memory.WithMarkerLogRetention(provider.MaxTTL))
	if err != nil || p.Owner() != "me" {
		t.Fatalf("New with valid options: %v, %v", p, err)
	}
}

// TestCorruptSignals: each corrupt record a listing skips is counted, logged
// with its key and put on the listing's span.
func TestCorruptSignals(t *testing.T) {
	b := memorytest.New()
	sig := signaltest.NewSignals()
	p := b.Open(t, memory.WithMeterProvider(sig.Meter), memory.WithLogger(sig.Log))
	sig.CheckCorrupt(t, "memory", p, func(kind provider.RecordKind, id ...string) { b.Corrupt(t, kind, id...) })
}
