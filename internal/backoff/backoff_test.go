package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelayStaysWithinCappedCeiling(t *testing.T) {
	p := Policy{Base: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	for attempt, ceiling := range []time.Duration{10, 20, 40, 80, 160, 200, 200} {
		ceiling *= time.Millisecond
		var maxSeen time.Duration
		for range 2000 {
			d := p.Delay(attempt)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: delay %v outside [0, %v]", attempt, d, ceiling)
			}
			maxSeen = max(maxSeen, d)
		}
		if maxSeen < ceiling/2 {
			t.Errorf("attempt %d: largest of 2000 delays %v, want jitter spread up to %v", attempt, maxSeen, ceiling)
		}
	}
	if d := p.Delay(1000); d > p.Max {
		t.Errorf("huge attempt: delay %v over cap %v", d, p.Max)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Policy{Base: time.Hour, Max: time.Hour}).Wait(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context = %v, want context.Canceled", err)
	}
}
