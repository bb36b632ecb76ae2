package memprovider

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/provider"
)

// DefaultReadinessTTL is how long PutReadiness keeps a result unless WithReadinessTTL says otherwise.
const DefaultReadinessTTL = provider.DefaultReadinessTTL

// Option configures a Provider; see New. An option given a bad value makes New or
// NewHandle fail with an error wrapping provider.ErrInvalidArgument.
type Option func(*Provider) error

// WithClock sets the clock that fills timestamps and judges TTLs (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(p *Provider) error {
		if err := provider.CheckClock(now); err != nil {
			return err
		}
		p.now = now
		return nil
	}
}

// WithOwner sets the lock owner identity (default: 16 random bytes in hex).
func WithOwner(owner string) Option {
	return func(p *Provider) error {
		if err := provider.CheckOwner(owner); err != nil {
			return err
		}
		p.owner = owner
		return nil
	}
}

// WithReadinessTTL sets how long readiness results are kept (default
// DefaultReadinessTTL); it must be positive and at most provider.MaxTTL.
func WithReadinessTTL(ttl time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckReadinessTTL(ttl); err != nil {
			return err
		}
		p.readinessTTL = ttl
		return nil
	}
}

// WithRetention sets how long the handle keeps each record kind it writes
// (default provider.DefaultRetention(): 30 days, 24 hours for the marker log),
// by its clock, from each write (see provider.Retention); a zero field keeps
// that kind forever. A record's retention is the one of the handle that wrote it
// last. A field that is negative or above provider.MaxTTL is invalid. The
// options below set one field each; the last option that sets a field wins.
func WithRetention(r provider.Retention) Option {
	return func(p *Provider) error {
		if err := r.Check(); err != nil {
			return fmt.Errorf("memory: WithRetention: %w", err)
		}
		p.retention = r
		return nil
	}
}

// WithEventRetention sets the Events field of the retention (WithRetention):
// each event is kept for d after it is appended, by the clock of the provider
// that appends it: from then on (now >= append time + d) it is invisible to
// ListEvents and ReadEventsSince, and a cursor whose next event was dropped is
// expired: ReadEventsSince and FollowEvents from it fail with
// provider.ErrCursorExpired ("" reads from the oldest event retained). 0 keeps
// events forever; d must be at most provider.MaxTTL.
func WithEventRetention(d time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckTTL(d); err != nil {
			return fmt.Errorf("memory: WithEventRetention: %w", err)
		}
		p.retention.Events = d
		return nil
	}
}

// WithMarkerLogRetention sets the MarkerLog field of the retention
// (WithRetention): each cascade marker write is kept in the log that
// WatchCascadeMarkers reads for d after it is written, by the clock of the
// provider that writes it: from then on (now >= write time + d) no watch
// delivers it, and a watch from a cursor after which a write was dropped fails
// with an error wrapping provider.ErrCursorExpired. The markers themselves
// (ListCascadeMarkers) are kept for the CascadeMarkers field. 0 keeps every
// write forever; d must be at most provider.MaxTTL.
func WithMarkerLogRetention(d time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckTTL(d); err != nil {
			return fmt.Errorf("memory: WithMarkerLogRetention: %w", err)
		}
		p.retention.MarkerLog = d
		return nil
	}
}

// WithReadOnly makes the handle read-only, as the networked backends' option of
// the same name makes theirs: every write method returns an error wrapping
// provider.ErrReadOnly (after the stopped and context checks, before any check
// of its arguments: the contract's opening order) and changes nothing; reads are
// unchanged (no read of any handle writes). Other handles of the same data may
// still write.
func WithReadOnly() Option {
	return func(p *Provider) error {
		p.life.SetReadOnly()
		return nil
	}
}

// WithMeterProvider sets the meter provider of the backend's signals (default:
// the global one, otel.GetMeterProvider()): the memory backend records only
// pipestate.corrupt.records, the stored records a listing or an iterator skipped
// because they do not decode (see "Corrupt records" in the package doc). nil is
// invalid.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(p *Provider) error {
		if nilcheck.IsNil(mp) {
			return provider.Invalidf("memory: WithMeterProvider: nil meter provider")
		}
		p.meter = mp
		return nil
	}
}

// WithLogger sets the logger of the backend's signals (default: none): a Warn
// record per corrupt record skipped. nil is invalid.
func WithLogger(log *slog.Logger) Option {
	return func(p *Provider) error {
		if log == nil {
			return provider.Invalidf("memory: WithLogger: nil logger")
		}
		p.log = log
		return nil
	}
}

// Provider is one client of its data. It implements provider.Provider and every
// optional interface (provider.Leaser, provider.CascadeReader,
// provider.RunCreator, provider.EventFollower, provider.MarkerWatcher,
// provider.LockInspector, provider.LockLister,
// provider.ActiveRunLister, provider.ActiveRunReindexer), and is safe for concurrent use.
type Provider struct {
	s            *data
	now          func() time.Time
	owner        string
	readinessTTL time.Duration
	retention    provider.Retention
	life         *lifecycle.Flag // stopped and read-only: every method opens with it
	meter        metric.MeterProvider
	log          *slog.Logger
	sig          *signal.Recorder
}

var (
	_ provider.Provider           = (*Provider)(nil)
	_ provider.Leaser             = (*Provider)(nil)
	_ provider.CascadeReader      = (*Provider)(nil)
	_ provider.RunCreator         = (*Provider)(nil)
	_ provider.EventFollower      = (*Provider)(nil)
	_ provider.MarkerWatcher      = (*Provider)(nil)
	_ provider.LockInspector      = (*Provider)(nil)
	_ provider.LockLister         = (*Provider)(nil)
	_ provider.ActiveRunLister    = (*Provider)(nil)
	_ provider.ActiveRunReindexer = (*Provider)(nil)
)

// New returns a Provider on new, empty data. It fails only on an invalid or nil
// option (an error wrapping provider.ErrInvalidArgument).
func New(opts ...Option) (*Provider, error) {
	return open(newData(), opts)
}

// NewHandle returns another Provider on p's data, like a second client of one
// server: it sees everything p writes, and p everything it writes. Its options are
// its own (a fresh owner identity, the default clock and TTLs unless opts say
// otherwise); p is unchanged.
func (p *Provider) NewHandle(opts ...Option) (*Provider, error) {
	return open(p.s, opts)
}

func open(s *data, opts []Option) (*Provider, error) {
	p := &Provider{s: s, now: time.Now, owner: ids.Random(), readinessTTL: DefaultReadinessTTL,
		retention: provider.DefaultRetention(), life: lifecycle.New("memory")}
	for _, o := range opts {
		if o == nil {
			return nil, provider.Invalidf("memory: nil option")
		}
		if err := o(p); err != nil {
			return nil, err
		}
	}
	p.sig = signal.New(p.meter, p.log, "memory")
	return p, nil
}

// Owner returns the lock owner identity of p.
func (p *Provider) Owner() string { return p.owner }

// enter opens a method that does not write, in the contract's opening order
// (lifecycle.Flag.Enter: stopped, then ctx, then the first failed check), then
// takes the store lock; the caller must call p.s.mu.Unlock.
func (p *Provider) enter(ctx context.Context, checks ...error) error {
	if err := p.life.Enter(ctx, checks...); err != nil {
		return err
	}
	p.s.mu.Lock()
	return nil
}

// enterWrite opens a write method, called op in errors, in the contract's
// opening order (lifecycle.Flag.EnterWrite: stopped, then ctx, then a read-only
// handle's provider.ErrReadOnly, then the first failed check), then takes the
// store lock; the caller must call p.s.mu.Unlock.
func (p *Provider) enterWrite(ctx context.Context, op string, checks ...error) error {
	if err := p.life.EnterWrite(ctx, op, checks...); err != nil {
		return err
	}
	p.s.mu.Lock()
	return nil
}

// ReadOnly reports whether p was opened with WithReadOnly.
func (p *Provider) ReadOnly() bool { return p.life.ReadOnly() }

// Start implements provider.Provider. It does nothing but report ErrClosed after
// Stop (and ctx.Err() for a done ctx).
func (p *Provider) Start(ctx context.Context) error { return p.life.Enter(ctx) }

// Stop implements provider.Provider. The data stays usable by p's other handles.
func (p *Provider) Stop(ctx context.Context) error {
	p.life.Close()
	return nil
}

// Ping implements provider.Provider.
func (p *Provider) Ping(ctx context.Context) error { return p.life.Enter(ctx) }
