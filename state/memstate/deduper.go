package memstate

import (
	"context"

	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/state"
)

var _ state.Deduper = (*Deduper)(nil)

// Deduper is an in-memory state.Deduper: MarkSeen claims an event ID for the TTL of
// WithDedupTTL (default state.DefaultDedupTTL; 0: forever). It is safe for concurrent
// use; exactly one concurrent MarkSeen per ID wins.
type Deduper struct {
	life *lifecycle.Flag
	d    *dedupData
}

type dedupData struct {
	mutexed
	claims claims
}

// NewDeduper creates empty claims and returns the first handle on them; NewHandle
// opens more. Options: WithClock, WithDedupTTL. A nil option or a bad value is an error
// wrapping state.ErrInvalidArgument.
func NewDeduper(opts ...DeduperOption) (*Deduper, error) {
	cfg, err := newConfig("NewDeduper", opts, DeduperOption.ApplyDeduper)
	if err != nil {
		return nil, err
	}
	d := &dedupData{}
	d.cfg = cfg
	return d.handle(), nil
}

// NewHandle returns another handle on dd's claims (as a second process would open
// the same Redis keys), with the claims' options; handles are closed independently.
func (dd *Deduper) NewHandle() *Deduper { return dd.d.handle() }

func (d *dedupData) handle() *Deduper {
	return &Deduper{life: lifecycle.New("state/memstate: Deduper"), d: d}
}

// MarkSeen claims eventID; firstSeen is true for exactly one caller per ID until the
// claim expires or is released. A bad ID is an error wrapping
// state.ErrInvalidArgument.
func (dd *Deduper) MarkSeen(ctx context.Context, eventID string) (bool, error) {
	if err := dd.life.Enter(ctx, state.CheckEventID(eventID)); err != nil {
		return false, err
	}
	d := dd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now()
	if d.claims.claimed(eventID, now) {
		return false, nil
	}
	d.claims.set(eventID, now, d.cfg.DedupTTL)
	return true, nil
}

// Release deletes the claim on eventID so the next MarkSeen wins; releasing an
// unclaimed ID is not an error.
func (dd *Deduper) Release(ctx context.Context, eventID string) error {
	if err := dd.life.Enter(ctx, state.CheckEventID(eventID)); err != nil {
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
func (dd *Deduper) Close() error { dd.life.Close(); return nil }
