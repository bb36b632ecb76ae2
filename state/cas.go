package state

import (
	"context"
	"fmt"
	"time"

	"github.com/pipestate/pipestate/internal/backoff"
	"github.com/pipestate/pipestate/monoid"
)

// Defaults of the compare-and-swap merge loop (RetryCAS) used by every BytesStore.
const (
	// DefaultMaxRetries is how many times a BytesStore retries a merge that lost a
	// compare-and-swap race before returning ErrContention (so at most
	// DefaultMaxRetries+1 attempts).
	DefaultMaxRetries = 10
	// DefaultRetryBase is the delay ceiling before the first retry.
	DefaultRetryBase = 2 * time.Millisecond
	// DefaultRetryMax caps the delay ceiling of later retries.
	DefaultRetryMax = 100 * time.Millisecond
)

// CASRead reads the current value of a key for RetryCAS: found is false when the key
// is missing or expired (the merge then starts from the identity), and version is
// whatever the backend's conditional write compares (a counter, the old bytes...).
type CASRead[V, Ver any] func(ctx context.Context) (cur V, found bool, version Ver, err error)

// CASWrite writes next only if the key still has the version read (or is still
// missing or expired when found is false). swapped is false when another writer got
// there first; err is for every other failure and stops the loop.
type CASWrite[V, Ver any] func(ctx context.Context, next V, found bool, version Ver) (swapped bool, err error)

// RetryCAS runs the read, combine, conditional-write loop of a BytesStore merge:
// it reads the current value, combines delta into it with m (TryCombine when m is
// monoid.Fallible: an incompatible stored value or delta returns an error wrapping
// ErrInvalidArgument and monoid.ErrIncompatible, and nothing is written), and writes it
// conditionally. On a lost race it waits with capped exponential backoff and full
// jitter (base DefaultRetryBase, cap DefaultRetryMax) and tries again, at most
// maxRetries times; then it returns an error wrapping ErrContention. retries
// is the number of lost races. ctx cancellation during a wait returns ctx.Err().
// maxRetries < 0 is ErrInvalidArgument.
func RetryCAS[V, Ver any](ctx context.Context, m monoid.Monoid[V], delta V, maxRetries int, read CASRead[V, Ver], write CASWrite[V, Ver]) (retries int, err error) {
	return retryCAS(ctx, m, delta, CASPolicy{MaxRetries: maxRetries, Base: DefaultRetryBase, Max: DefaultRetryMax}, read, write)
}

// CASPolicy is the retry policy of RetryCASPolicy: at most MaxRetries retries
// (>= 0), before retry n a random delay in [0, min(Max, Base*2^n)] (capped
// exponential backoff with full jitter; 0 < Base <= Max).
type CASPolicy struct {
	MaxRetries int
	Base, Max  time.Duration
	// OnRetry, when not nil, is called in the merging goroutine for each lost race
	// that will be retried, before the wait, with the retry's number (1 for the
	// first) and the merge's ctx; backends record retries with it. The lost race
	// that exhausts MaxRetries is not retried: it is the ErrContention return, so
	// lost races = OnRetry calls + ErrContention returns.
	OnRetry func(ctx context.Context, retry int)
}

// DefaultCASPolicy returns DefaultMaxRetries, DefaultRetryBase and DefaultRetryMax.
func DefaultCASPolicy() CASPolicy {
	return CASPolicy{MaxRetries: DefaultMaxRetries, Base: DefaultRetryBase, Max: DefaultRetryMax}
}

// Check returns an error wrapping ErrInvalidArgument unless MaxRetries >= 0 and
// 0 < Base <= Max.
func (p CASPolicy) Check() error {
	if p.MaxRetries < 0 || p.Base <= 0 || p.Max < p.Base {
		return Invalidf("CAS policy: max retries %d (want >= 0), base %v, max %v (want 0 < base <= max)", p.MaxRetries, p.Base, p.Max)
	}
	return nil
}

// RetryCASPolicy is RetryCAS with the retry count, backoff and OnRetry hook of p
// (p.Check errors are returned before anything is read).
func RetryCASPolicy[V, Ver any](ctx context.Context, m monoid.Monoid[V], delta V, p CASPolicy, read CASRead[V, Ver], write CASWrite[V, Ver]) (retries int, err error) {
	if err := p.Check(); err != nil {
		return 0, err
	}
	return retryCAS(ctx, m, delta, p, read, write)
}

func retryCAS[V, Ver any](ctx context.Context, m monoid.Monoid[V], delta V, p CASPolicy, read CASRead[V, Ver], write CASWrite[V, Ver]) (int, error) {
	maxRetries, wait := p.MaxRetries, backoff.Policy{Base: p.Base, Max: p.Max}
	if maxRetries < 0 {
		return 0, Invalidf("max retries %d is negative", maxRetries)
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return attempt, err
		}
		cur, found, ver, err := read(ctx)
		if err != nil {
			return attempt, err
		}
		if !found {
			cur = m.Identity()
		}
		next, err := Combine(m, cur, delta)
		if err != nil {
			return attempt, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		swapped, err := write(ctx, next, found, ver)
		if err != nil {
			return attempt, err
		}
		if swapped {
			return attempt, nil
		}
		if attempt >= maxRetries {
			return attempt + 1, fmt.Errorf("%w: lost %d compare-and-swap races", ErrContention, attempt+1)
		}
		if p.OnRetry != nil {
			p.OnRetry(ctx, attempt+1)
		}
		if err := wait.Wait(ctx, attempt); err != nil {
			return attempt + 1, err
		}
	}
}
