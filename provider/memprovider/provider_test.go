package memprovider_test

import (
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/memorytest"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
)

// TestNewRejectsBadOptions passes a nil option and each bad option value to New and
// NewHandle: an error wrapping ErrInvalidArgument, never a panic.
func TestNewRejectsBadOptions(t *testing.T) {
	base, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  memprovider.Option
	}{
		{"nil_option", nil},
		{"nil_clock", memprovider.WithClock(nil)},
		{"empty_owner", memprovider.WithOwner("")},
		{"zero_readiness_ttl", memprovider.WithReadinessTTL(0)},
		{"negative_readiness_ttl", memprovider.WithReadinessTTL(-time.Second)},
		{"readiness_ttl_over_max", memprovider.WithReadinessTTL(provider.MaxTTL + 1)},
		{"negative_retention", memprovider.WithEventRetention(-time.Second)},
		{"retention_over_max", memprovider.WithEventRetention(provider.MaxTTL + 1)},
		{"negative_marker_retention", memprovider.WithMarkerLogRetention(-time.Second)},
		{"marker_retention_over_max", memprovider.WithMarkerLogRetention(provider.MaxTTL + 1)},
		{"negative_run_retention", memprovider.WithRetention(provider.Retention{Runs: -time.Nanosecond})},
		{"replay_retention_over_max", memprovider.WithRetention(provider.Retention{Replays: provider.MaxTTL + 1})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := memprovider.New(tc.opt); !errors.Is(err, provider.ErrInvalidArgument) {
				t.Errorf("New = %v, %v; want ErrInvalidArgument", p, err)
			}
			if p, err := base.NewHandle(tc.opt); !errors.Is(err, provider.ErrInvalidArgument) {
				t.Errorf("NewHandle = %v, %v; want ErrInvalidArgument", p, err)
			}
		})
	}
	p, err := memprovider.New(memprovider.WithOwner("me"), memprovider.WithReadinessTTL(provider.MaxTTL), memprovider.WithEventRetention(provider.MaxTTL),
		memprovider.WithMarkerLogRetention(provider.MaxTTL))
	if err != nil || p.Owner() != "me" {
		t.Fatalf("New with valid options: %v, %v", p, err)
	}
}

// TestCorruptSignals: each corrupt record a listing skips is counted, logged
// with its key and put on the listing's span.
func TestCorruptSignals(t *testing.T) {
	b := memorytest.New()
	sig := signaltest.NewSignals()
	p := b.Open(t, memprovider.WithMeterProvider(sig.Meter), memprovider.WithLogger(sig.Log))
	sig.CheckCorrupt(t, "memory", p, func(kind provider.RecordKind, id ...string) { b.Corrupt(t, kind, id...) })
}
