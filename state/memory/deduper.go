package memory

import (
	"context"

	"github.com/pipestate/pipestate/state"
)

var _ state.Deduper = (*Deduper)(nil)

// Deduper is an in-memory state.Deduper: MarkSeen claims an event ID for the TTL of
// WithTTL (default state.DefaultDedupTTL; 0: forever). It is safe for concurrent
// use; exactly one concurrent MarkSeen per ID wins.
type Deduper struct {
	lifecycle
	d *dedupData
}

type dedupData struct {
	mutexed
	claims claims
}

// NewDeduper returns an empty deduper. Options: WithClock, WithTTL. A nil option or
// WithDedupTTL (a Store option) is an error wrapping state.ErrInvalidArgument.
func NewDeduper(opts ...Option) (*Deduper, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.dedupSet {
		return nil, state.Invalidf("memory.NewDeduper: WithDedupTTL is a Store option; use WithTTL")
	}
	d := &dedupData{}
	d.cfg = cfg
	return &Deduper{d: d}, nil
}

// NewHandle returns another handle on the same claims, closed independently.
func (dd *Deduper) NewHandle() *Deduper { return &Deduper{d: dd.d} }

// MarkSeen claims eventID; firstSeen is true for exactly one caller per ID until the
// claim expires or is released. A bad ID is an error wrapping
// state.ErrInvalidArgument.
func (dd *Deduper) MarkSeen(ctx context.Context, eventID string) (bool, error) {
	if err := dd.enter(ctx); err != nil {
		return false, err
	}
	if err := state.CheckEventID(eventID); err != nil {
		return false, err
	}
	d := dd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.now()
	if d.claims.claimed(eventID, now) {
		return false, nil
	}
	d.claims.set(eventID, now, d.cfg.ttl)
	return true, nil
}

// Release deletes the claim on eventID so the next MarkSeen wins; releasing an
// unclaimed ID is not an error.
func (dd *Deduper) Release(ctx context.Context, eventID string) error {
	if err := dd.enter(ctx); err != nil {
		return err
	}
	if err := state.CheckEventID(eventID); err != nil {
		return err
	}
	d := dd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.claims.m, eventID)
	return nil
}

// Close closes this handle; later calls on it return an error wrapping
// state.ErrClosed. It is idempotent.
func (dd *Deduper) Close() error { return dd.lifecycle.Close() }
