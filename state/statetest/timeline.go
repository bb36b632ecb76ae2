package statetest

import (
	"fmt"
	"testing"
	"time"
)

// RealTimeAttempts is how many times a test that observes expiry on a real clock
// runs its scenario (with fresh keys) while a loaded machine makes its
// observations inconclusive; see timeline.
const RealTimeAttempts = 3

// A timeline follows time as the stores of one test see it, so that a test can
// plan an instant relative to the calls it made and then check that its
// observations really saw that instant.
//
// With a fake clock (Harness.FakeTime) it counts what Sleep moved, every call
// takes no time, and an instant is observed exactly. On a real clock it times
// every call: a call did what it did somewhere within its span, so an expiry
// set by a merge with ttl lies within [merge.from+ttl, merge.to+ttl], and an
// observation is conclusive only when the call ran entirely on the side of the
// instant it is meant to observe: before the earliest expiry to see a value live,
// from the latest one on to see it gone. Margins come from the measured calls,
// not from constants, so a slow machine makes an observation inconclusive instead
// of wrong; the test then runs its scenario again (RealTimeAttempts in all), and
// skips, saying why, when no attempt was conclusive.
type timeline struct {
	fake    bool
	sleep   func(d time.Duration)
	start   time.Time
	slept   time.Duration // what sleep was asked to let pass so far
	slowest time.Duration // the longest call so far
	late    time.Duration // the most a sleep overran so far
}

// span is when a call ran, counted from the timeline's start: it began at from
// and returned at to (from == to on a fake clock).
type span struct{ from, to time.Duration }

func newTimeline(fake bool, sleep func(d time.Duration)) *timeline {
	return &timeline{fake: fake, sleep: sleep, start: time.Now()}
}

// now is the time since the timeline's start. On a real clock it is never less
// than what was slept, so that a Sleep that only moves a fake clock (a harness
// that did not say FakeTime) still plans sensibly.
func (tl *timeline) now() time.Duration {
	if tl.fake {
		return tl.slept
	}
	return max(time.Since(tl.start), tl.slept)
}

// sleepUntil lets time pass until at (nothing when at has passed).
func (tl *timeline) sleepUntil(at time.Duration) {
	if d := at - tl.now(); d > 0 {
		tl.sleep(d)
		tl.slept += d
		tl.late = max(tl.late, tl.now()-at)
	}
}

// do runs f, a call to the stores, and returns when it ran.
func (tl *timeline) do(f func()) span {
	from := tl.now()
	f()
	s := span{from, tl.now()}
	tl.slowest = max(tl.slowest, s.to-s.from)
	return s
}

// justBefore is an instant shortly before at, planned so that a call starting
// then ends before at: on a fake clock a second before (the resolution of the
// coarsest backend, DynamoDB's; miniredis, which deletes a key once its
// remaining ttl reaches 0, sees a Redis store's values expire a millisecond
// early) or a quarter of ttl when that is shorter; on a real clock a margin of
// five times the slowest call plus twice the most a sleep overran so far (at
// least 10 ms), at most a quarter of ttl.
func (tl *timeline) justBefore(at, ttl time.Duration) time.Duration {
	if tl.fake {
		return at - min(time.Second, ttl/4)
	}
	return at - min(max(5*tl.slowest+2*tl.late, 10*time.Millisecond), ttl/4)
}

// between is the middle of [from, to): the instant to observe what must hold
// after from and before to, with the most room on either side.
func between(from, to time.Duration) time.Duration { return from + (to-from)/2 }

// endsBefore returns "" when call s ended before at, else why the observation it
// made is inconclusive.
func endsBefore(s span, at time.Duration, what string) string {
	if s.to < at {
		return ""
	}
	return fmt.Sprintf("%s ended %v after the instant it had to precede", what, s.to-at)
}

// startsFrom returns "" when call s started at or after at, else why the
// observation it made is inconclusive.
func startsFrom(s span, at time.Duration, what string) string {
	if s.from >= at {
		return ""
	}
	return fmt.Sprintf("%s started %v before the instant it had to follow", what, at-s.from)
}

// observe runs scenario until one attempt's observations are all conclusive:
// scenario returns "" then, or why one was not, before asserting anything it
// observed. Each attempt gets a fresh timeline and its number, for fresh keys.
// On a fake clock every observation is conclusive: an inconclusive one is a bug
// of the test and fails it.
func observe(t *testing.T, fake bool, sleep func(*testing.T, time.Duration), scenario func(tl *timeline, attempt int) (inconclusive string)) {
	t.Helper()
	for attempt := range RealTimeAttempts {
		tl := newTimeline(fake, func(d time.Duration) { sleep(t, d) })
		why := scenario(tl, attempt)
		if why == "" || t.Failed() {
			return
		}
		if fake {
			t.Fatalf("statetest: inconclusive on a fake clock: %s", why)
		}
		t.Logf("attempt %d inconclusive (a slow machine: the slowest call took %v, a sleep overran by up to %v): %s", attempt+1, tl.slowest, tl.late, why)
	}
	t.Skipf("no conclusive observation in %d attempts on a slow machine; a longer Harness.TTL leaves more room", RealTimeAttempts)
}

// observe runs scenario with h's clock; see observe.
func (h *Harness[V]) observe(t *testing.T, scenario func(tl *timeline, attempt int) string) {
	t.Helper()
	observe(t, h.FakeTime, h.sleep, scenario)
}

// observe runs scenario with h's clock; see observe.
func (h *DeduperHarness) observe(t *testing.T, scenario func(tl *timeline, attempt int) string) {
	t.Helper()
	observe(t, h.FakeTime, h.sleep, scenario)
}
