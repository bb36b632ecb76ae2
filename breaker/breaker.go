package breaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/signal"
)

// Defaults of the options.
const (
	DefaultFailures = 5                // WithFailures
	DefaultOpenFor  = 10 * time.Second // WithOpenFor
	DefaultProbes   = 1                // WithProbes
)

// State is a breaker's state.
type State int

// The states, also the values of the pipestate.breaker.state gauge.
const (
	Closed   State = 0 // requests go through; failures are counted
	HalfOpen State = 1 // up to the probes go through; their outcome decides
	Open     State = 2 // requests fail fast with ErrUnavailable, unsent
)

// String returns "closed", "half_open" or "open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half_open"
	case Open:
		return "open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// AttrName is the attribute naming a breaker on its gauge and log records.
const AttrName = attribute.Key("pipestate.breaker.name")

// Breaker guards the requests of one backend instance. Make one per endpoint
// (a Redis server or cluster, a DynamoDB region), attach it to that endpoint's
// client (RedisHook, DynamoDB) and share the client between the provider and
// the stores. A Breaker is safe for concurrent use.
type Breaker struct {
	name      string
	cb        *gobreaker.TwoStepCircuitBreaker[struct{}]
	isFailure func(error) bool
	log       *slog.Logger
}

type config struct {
	failures  uint32
	openFor   time.Duration
	probes    uint32
	isFailure func(error) bool
	meter     metric.MeterProvider
	log       *slog.Logger
}

// Option configures New.
type Option func(*config) error

// WithFailures sets how many failures in a row open the breaker (default
// DefaultFailures). A success, or an outcome that is not a failure (see
// IsFailure), ends the run.
func WithFailures(n int) Option {
	return func(c *config) error {
		if n < 1 || int64(n) > int64(^uint32(0)) {
			return fmt.Errorf("%w: breaker: WithFailures(%d): want at least 1", pipestate.ErrInvalidArgument, n)
		}
		c.failures = uint32(n)
		return nil
	}
}

// WithOpenFor sets how long an open breaker refuses every request before it
// lets probes through (default DefaultOpenFor).
func WithOpenFor(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: breaker: WithOpenFor(%v): want a positive duration", pipestate.ErrInvalidArgument, d)
		}
		c.openFor = d
		return nil
	}
}

// WithProbes sets how many requests a half-open breaker lets through at once
// (default DefaultProbes); that many successes in a row close it, one failure
// opens it again.
func WithProbes(n int) Option {
	return func(c *config) error {
		if n < 1 || int64(n) > int64(^uint32(0)) {
			return fmt.Errorf("%w: breaker: WithProbes(%d): want at least 1", pipestate.ErrInvalidArgument, n)
		}
		c.probes = uint32(n)
		return nil
	}
}

// WithFailure replaces IsFailure, the rule that tells a failure (counted
// toward opening the breaker) from any other outcome. Use it for a backend
// of your own guarded with Do.
func WithFailure(isFailure func(error) bool) Option {
	return func(c *config) error {
		if isFailure == nil {
			return fmt.Errorf("%w: breaker: WithFailure(nil)", pipestate.ErrInvalidArgument)
		}
		c.isFailure = isFailure
		return nil
	}
}

// WithMeterProvider sets where the pipestate.breaker.state gauge goes
// (default: otel.GetMeterProvider()).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if nilcheck.IsNil(mp) {
			return fmt.Errorf("%w: breaker: WithMeterProvider(nil)", pipestate.ErrInvalidArgument)
		}
		c.meter = mp
		return nil
	}
}

// WithLogger sets where state changes are logged (default: nowhere): Warn when
// the breaker opens, Info when it half-opens or closes.
func WithLogger(log *slog.Logger) Option {
	return func(c *config) error {
		if log == nil {
			return fmt.Errorf("%w: breaker: WithLogger(nil)", pipestate.ErrInvalidArgument)
		}
		c.log = log
		return nil
	}
}

// New returns a closed breaker. name identifies it on its gauge and log
// records (bounded: name the endpoint, not a call).
func New(name string, opts ...Option) (*Breaker, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: breaker: New: empty name", pipestate.ErrInvalidArgument)
	}
	c := config{failures: DefaultFailures, openFor: DefaultOpenFor, probes: DefaultProbes, isFailure: IsFailure}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: breaker: New: nil option", pipestate.ErrInvalidArgument)
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.meter == nil {
		c.meter = otel.GetMeterProvider()
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	b := &Breaker{name: name, isFailure: c.isFailure, log: c.log.With(string(AttrName), name)}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:          name,
		MaxRequests:   c.probes,
		Timeout:       c.openFor,
		ReadyToTrip:   func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= c.failures },
		OnStateChange: b.changed,
		IsSuccessful:  func(err error) bool { return !b.isFailure(err) },
		IsExcluded:    excluded,
	})
	attrs := metric.WithAttributes(AttrName.String(name))
	// Instrument creation fails only for invalid names; this one is constant.
	_, _ = c.meter.Meter(signal.ScopeName, metric.WithInstrumentationVersion(modversion.Version())).Int64ObservableGauge("pipestate.breaker.state",
		metric.WithUnit("{state}"),
		metric.WithDescription("Circuit breaker state: 0 closed, 1 half-open, 2 open."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(b.State()), attrs)
			return nil
		}))
	return b, nil
}

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.name }

// State returns the breaker's state now.
func (b *Breaker) State() State {
	switch b.cb.State() {
	case gobreaker.StateOpen:
		return Open
	case gobreaker.StateHalfOpen:
		return HalfOpen
	}
	return Closed
}

// Do runs call unless the breaker refuses it, and counts its outcome. A
// refusal returns an error wrapping pipestate.ErrUnavailable without calling
// call. It is the guard for a backend of your own; the Redis and DynamoDB
// clients take RedisHook and DynamoDB instead.
func (b *Breaker) Do(call func() error) error {
	done, err := b.allow()
	if err != nil {
		return err
	}
	err = call()
	done(err)
	return err
}

// allow returns the function that records a permitted request's outcome, or
// the error of a refused one.
func (b *Breaker) allow() (func(error), error) {
	done, err := b.cb.Allow()
	if err != nil {
		return nil, fmt.Errorf("breaker %s: %w: %w", b.name, pipestate.ErrUnavailable, err)
	}
	return done, nil
}

func (b *Breaker) changed(_ string, from, to gobreaker.State) {
	level := slog.LevelInfo
	if to == gobreaker.StateOpen {
		level = slog.LevelWarn
	}
	b.log.Log(context.Background(), level, "pipestate: circuit breaker "+to.String(),
		"from", from.String(), "to", to.String())
}

// excluded reports outcomes the breaker ignores: the caller's cancellation says
// nothing about the backend.
func excluded(err error) bool { return errors.Is(err, context.Canceled) }
