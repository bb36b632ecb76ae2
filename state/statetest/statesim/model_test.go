package statesim

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
)

// TestModelRules pins the referee's rules at their edges: expiry and claims at
// the exact instant, what a value remembers of fences living exactly as long
// as the value (also when an unfenced merge extended it), and a cached read's
// allowed states.
func TestModelRules(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := newModel(monoid.Sum[int64]{}, start)
	m.merge(0, 3, time.Hour, "job", 2)
	m.claim("e0", 0, time.Hour)
	m.merge(0, 1, 4*time.Hour, "", 0) // unfenced, extends the value
	m.advance(2 * time.Hour)
	if must, may := m.fenceVerdict(0, "job", 1); !must || !may {
		t.Errorf("fence 1 after an unfenced merge extended the value: must=%v may=%v, want refused", must, may)
	}
	if must, may := m.fenceVerdict(0, "other", 1); must || may {
		t.Errorf("another lease key: must=%v may=%v, want accepted", must, may)
	}
	if m.claimed("e0", 0) {
		t.Error("a claim of an hour is held two hours later")
	}
	m.advance(2*time.Hour - time.Second)
	if !m.keys[0].found || m.keys[0].v != 4 {
		t.Errorf("a second before its expiry the value is %v, want 4", m.keys[0].snap)
	}
	m.advance(time.Second)
	if m.keys[0].found {
		t.Error("the value is found at its expiry instant")
	}
	if must, may := m.fenceVerdict(0, "job", 1); must || !may {
		t.Errorf("fence 1 after the value expired: must=%v may=%v, want either", must, may)
	}
	if got := m.within(0, time.Minute); len(got) != 2 || !got[0].found || got[1].found {
		t.Errorf("a cached read at the expiry instant may return %v, want [4 missing]", got)
	}
	m.advance(time.Minute)
	if got := m.within(0, time.Minute); len(got) != 1 || got[0].found {
		t.Errorf("a cached read a staleness after the expiry may return %v, want [missing]", got)
	}
}
