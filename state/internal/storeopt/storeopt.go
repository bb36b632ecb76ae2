// Package storeopt is what the options of the state backends share: the settings
// (the clock, the CAS retry policy, the claim TTL of MergeUpdateOnce and of a
// Deduper, the meter provider and logger of the backend's signals) with their defaults
// and checks, the loop that applies options, and the compare-and-swap merge loop
// recording its retries and give-ups on those signals (RetryCAS). Which
// constructor accepts which option is not checked here: each backend gives every
// constructor its own option interface, so the compiler checks it (see the
// backends' options.go).
package storeopt

import (
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/state"
)

// Common holds the settings the backends share, each backend reading those it has
// (memory has no CAS loop, Redis no clock of its own).
type Common struct {
	Ctor     string               // the constructor being configured, for error messages
	Now      func() time.Time     // the clock that judges expiry
	CAS      state.CASPolicy      // retries of lost races
	DedupTTL time.Duration        // life of claims: MergeUpdateOnce's and a Deduper's
	Meter    metric.MeterProvider // of the backend's signals; nil: the global one
	Log      *slog.Logger         // of the backend's signals; nil: none
}

// NewCommon returns the defaults for constructor ctor: time.Now,
// state.DefaultCASPolicy and state.DefaultDedupTTL.
func NewCommon(ctor string) Common {
	return Common{Ctor: ctor, Now: time.Now, CAS: state.DefaultCASPolicy(), DedupTTL: state.DefaultDedupTTL}
}

// Apply runs apply(o, c) for each option o in order. A nil option (also a typed
// nil) is an error wrapping state.ErrInvalidArgument, and so is any error an option
// returns. apply is usually a method expression of the constructor's option
// interface, such as StoreOption.ApplyStore.
func Apply[C, O any](c *C, ctor string, opts []O, apply func(O, *C) error) error {
	for _, o := range opts {
		if nilcheck.IsNil(o) {
			return state.Invalidf("%s: nil option", ctor)
		}
		if err := apply(o, c); err != nil {
			return err
		}
	}
	return nil
}

// SetClock is WithClock: now must not be nil.
func (c *Common) SetClock(now func() time.Time) error {
	if now == nil {
		return state.Invalidf("%s: nil clock", c.Ctor)
	}
	c.Now = now
	return nil
}

// SetMeterProvider is WithMeterProvider: mp must not be nil (also not a typed nil).
func (c *Common) SetMeterProvider(mp metric.MeterProvider) error {
	if nilcheck.IsNil(mp) {
		return state.Invalidf("%s: nil meter provider", c.Ctor)
	}
	c.Meter = mp
	return nil
}

// SetLogger is WithLogger: log must not be nil.
func (c *Common) SetLogger(log *slog.Logger) error {
	if log == nil {
		return state.Invalidf("%s: nil logger", c.Ctor)
	}
	c.Log = log
	return nil
}

// Signal returns the recorder of the backend's retries, give-ups and reloads, with
// db.system.name system, through the configured meter provider and logger.
func (c *Common) Signal(system string) *signal.Recorder { return signal.New(c.Meter, c.Log, system) }

// SetMaxRetries is WithMaxRetries: n >= 0.
func (c *Common) SetMaxRetries(n int) error {
	if n < 0 {
		return state.Invalidf("%s: max retries %d is negative", c.Ctor, n)
	}
	c.CAS.MaxRetries = n
	return nil
}

// SetBackoff is WithBackoff: 0 < base <= max.
func (c *Common) SetBackoff(base, max time.Duration) error {
	if base <= 0 || max < base {
		return state.Invalidf("%s: backoff base %v and max %v must be positive with base <= max", c.Ctor, base, max)
	}
	c.CAS.Base, c.CAS.Max = base, max
	return nil
}

// SetDedupTTL is WithDedupTTL: d passes state.CheckTTL (0 = forever).
func (c *Common) SetDedupTTL(d time.Duration) error {
	if err := state.CheckTTL(d); err != nil {
		return fmt.Errorf("%s: dedup %w", c.Ctor, err)
	}
	c.DedupTTL = d
	return nil
}
