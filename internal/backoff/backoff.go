// Package backoff computes retry delays: capped exponential backoff with full jitter
// (a random delay in [0, min(Max, Base*2^attempt)]), as recommended for contended
// optimistic writes and throttled batch calls.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy is a capped exponential backoff with full jitter.
type Policy struct {
	Base time.Duration // delay ceiling of the first retry
	Max  time.Duration // cap on the delay ceiling
}

// Delay returns the jittered delay before retry number attempt (0-based).
func (p Policy) Delay(attempt int) time.Duration {
	ceiling := p.Max
	if attempt < 62 {
		if d := p.Base << attempt; d > 0 && d < p.Max {
			ceiling = d
		}
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}

// Wait sleeps for Delay(attempt) or until ctx is done, returning ctx.Err() then.
func (p Policy) Wait(ctx context.Context, attempt int) error {
	d := p.Delay(attempt)
	if d == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
