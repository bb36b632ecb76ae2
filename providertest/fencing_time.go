package providertest

import (
	"testing"

	"github.com/pipestate/pipestate/provider"
)

// fencingTime runs the rule's tests with time on one write (package fence,
// "Lifetime"): what a record remembers lives as long as the record, whatever
// write extended the record last. A record written under fence 5, rewritten
// when half its retention R has passed (unfenced, as an operator's fix or an
// older version does, or fenced 5 again), then time moved to 1.25 R, past the
// first write's expiry (by a quarter of R, more than any backend's slack
// between a record's expiry and its deletion) and before the rewrite's: the
// record is live, so fence 4 is still refused and writes nothing. It needs
// Harness.Sleep and the write's record kind in Harness.Retention; it skips
// without them.
func fencingTime(t *testing.T, s *suite, w fencedWrite, open func(t *testing.T) (provider.Provider, provider.Provider, ids),
	do func(t *testing.T, p provider.Provider, k ids, key string, f int64, i int) error,
	refused func(t *testing.T, p, q provider.Provider, k ids, key string, f int64, i int, what string)) {
	keep := w.keep(s.h.Retention)
	for _, c := range []struct {
		name  string
		fence int64 // of the rewrite, 0 unfenced
	}{
		{"unfenced_rewrite_keeps_fence_past_first_retention", 0},
		{"fenced_rewrite_keeps_fence_past_first_retention", 5},
	} {
		test(t, c.name, func(t *testing.T) {
			switch {
			case s.h.Sleep == nil:
				t.Skip("needs Harness.Sleep to move the clock past a retention")
			case keep <= 0:
				t.Skipf("needs Harness.Retention for the record %s writes", w.name)
			}
			p, q, k := open(t)
			if err := do(t, p, k, k.lock, 5, 1); err != nil {
				t.Fatalf("%s fenced 5: %v", w.name, err)
			}
			s.sleep(t, keep/2)
			if err := do(t, q, k, k.lock, c.fence, 2); err != nil {
				t.Fatalf("%s rewrite (fence %d, 0 unfenced) at half the retention: %v", w.name, c.fence, err)
			}
			s.sleep(t, keep*3/4)
			if got := w.read(t, q, k); got == "" {
				t.Fatalf("%s: the rewritten record is gone a quarter of its retention before its expiry", w.name)
			}
			refused(t, p, q, k, k.lock, 4, 3, "fenced 4 past the first write's retention, before the rewrite's")
		})
	}
}
