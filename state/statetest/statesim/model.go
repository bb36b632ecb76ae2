package statesim

import (
	"fmt"
	"time"

	"github.com/pipestate/pipestate/monoid"
)

// The reference model: sequential, an int64 per key (Harness.Monoid's), and the rules of
// package state's doc ("Rules every backend follows", "Corrupt values") and
// package fence's ("The rule", "Lifetime").

// snap is what a read of one key may observe.
type snap struct {
	found   bool
	v       int64
	corrupt bool
}

func (s snap) String() string {
	switch {
	case s.corrupt:
		return "corrupt"
	case !s.found:
		return "missing"
	}
	return fmt.Sprint(s.v)
}

// keyM is one key.
type keyM struct {
	snap
	exp time.Time // zero: no expiry
	// sure is what the key surely remembers while its value lives: lease key
	// -> the highest fence that merged into it (fence doc, "Lifetime").
	sure map[string]int64
	// hist is every state the key had, from when (for the staleness of
	// cache reads).
	hist []histE
}

type histE struct {
	at time.Time
	s  snap
}

type claimID struct {
	event string
	key   int
}

type model struct {
	mono   monoid.Monoid[int64]
	now    time.Time
	keys   []keyM
	claims map[claimID]time.Time // the claim's expiry; zero: never
	// maxFence is the highest fence of each lease key that ever merged into
	// any key: a backend may remember longer and for larger groups of
	// records, which refuses more, so a fence below it may be refused.
	maxFence map[string]int64
	// seen is the Deduper's claims: event ID -> the claim's expiry (zero:
	// never).
	seen map[string]time.Time
}

func newModel(mono monoid.Monoid[int64], now time.Time) *model {
	m := &model{mono: mono, now: now, claims: map[claimID]time.Time{}, maxFence: map[string]int64{}, seen: map[string]time.Time{}}
	for range keys {
		m.keys = append(m.keys, keyM{hist: []histE{{at: now}}})
	}
	return m
}

func (m *model) set(k int, s snap) {
	m.keys[k].snap = s
	m.keys[k].hist = append(m.keys[k].hist, histE{at: m.now, s: s})
}

// advance moves the clock by d and expires what expired: a value is expired
// when now >= its expiry, and what it remembered goes with it.
func (m *model) advance(d time.Duration) {
	m.now = m.now.Add(d)
	for i := range m.keys {
		k := &m.keys[i]
		if k.found && !k.corrupt && !k.exp.IsZero() && !m.now.Before(k.exp) {
			k.snap = snap{}
			k.sure = nil
			k.hist = append(k.hist, histE{at: k.exp})
			k.exp = time.Time{}
		}
	}
}

// instants are the expiries still ahead: the values', the claims' and the
// Deduper's.
func (m *model) instants() []time.Time {
	var out []time.Time
	for _, k := range m.keys {
		if k.found && !k.exp.IsZero() && k.exp.After(m.now) {
			out = append(out, k.exp)
		}
	}
	for _, e := range events {
		for i := range keys {
			if x, ok := m.claims[claimID{e, i}]; ok && x.After(m.now) {
				out = append(out, x)
			}
		}
	}
	for _, id := range seenIDs {
		if x, ok := m.seen[id]; ok && x.After(m.now) {
			out = append(out, x)
		}
	}
	return out
}

// fenceVerdict says what a merge into key k fenced by (lease, f) may do:
// refuse surely (the live value remembers a newer fence of lease), or may
// (some record once remembered one: a backend may remember longer, and for a
// larger group of records).
func (m *model) fenceVerdict(k int, lease string, f int64) (must, may bool) {
	must = m.keys[k].found && m.keys[k].sure[lease] > f
	return must, must || m.maxFence[lease] > f
}

// merge applies an accepted merge of delta into k with ttl, fenced by (lease,
// f) when lease != "".
func (m *model) merge(k int, delta int64, ttl time.Duration, lease string, f int64) {
	km := &m.keys[k]
	v := m.mono.Identity()
	if km.found {
		v = km.v
	}
	km.exp = time.Time{}
	if ttl > 0 {
		km.exp = m.now.Add(ttl)
	}
	if lease != "" {
		if km.sure == nil {
			km.sure = map[string]int64{}
		}
		km.sure[lease] = max(km.sure[lease], f)
		m.maxFence[lease] = max(m.maxFence[lease], f)
	}
	m.set(k, snap{found: true, v: m.mono.Combine(v, delta)})
}

// claimed reports whether event's claim on k is live.
func (m *model) claimed(event string, k int) bool {
	x, ok := m.claims[claimID{event, k}]
	return ok && (x.IsZero() || m.now.Before(x))
}

// claim claims event on k for ttl (0: for ever).
func (m *model) claim(event string, k int, ttl time.Duration) {
	x := time.Time{}
	if ttl > 0 {
		x = m.now.Add(ttl)
	}
	m.claims[claimID{event, k}] = x
}

// corrupt makes k's value undecodable, with no expiry. What it remembered
// may be lost with the value written raw.
func (m *model) corrupt(k int) {
	m.keys[k].exp = time.Time{}
	m.keys[k].sure = nil
	m.set(k, snap{found: true, corrupt: true})
}

// within are the states k had at some instant t with now - t < staleness: what
// a cached read may return (package state/cache: a cached value is served
// while now - the start of the read that fetched it < staleness).
func (m *model) within(k int, staleness time.Duration) []snap {
	h := m.keys[k].hist
	from := m.now.Add(-staleness)
	var out []snap
	for i, e := range h {
		if i == len(h)-1 || h[i+1].at.After(from) { // in effect after from
			out = append(out, e.s)
		}
	}
	return out
}
