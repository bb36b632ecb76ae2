package sim

import (
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// live is provider.Live: an entry with a zero expiry never expires, one whose
// expiry has come (now >= expiry) is gone.
func live(exp, now time.Time) bool { return provider.Live(exp, now) }

// fenceMem is what a record remembers of the fences that wrote it, per lease
// key, as far as the contract pins it: sure is the highest fence the record
// must remember (a lower one must be refused), maybe the highest it may
// remember (a fence at or above it must pass). They differ after the record
// expired: "what a record remembers lives as long as the record ... and no
// longer", and "a backend may remember longer, which only refuses more".
type fenceMem struct{ sure, maybe map[string]int64 }

func newFenceMem() fenceMem { return fenceMem{sure: map[string]int64{}, maybe: map[string]int64{}} }

// forget is called when the record is found expired: nothing it remembers is
// sure any more.
func (m fenceMem) forget() { clear(m.sure) }

// verdict is what a fenced write of tok may do: must refuse, must pass, or
// either.
type verdict int

const (
	mustPass verdict = iota
	mustRefuse
	mayRefuse
)

func (m fenceMem) check(key string, f int64) verdict {
	switch {
	case f < m.sure[key]:
		return mustRefuse
	case f < m.maybe[key]:
		return mayRefuse
	}
	return mustPass
}

// wrote records that a write with fence f of key passed (and wrote): the
// record remembers f, and nothing above it for key (else it would have
// refused).
func (m fenceMem) wrote(key string, f int64) {
	m.sure[key], m.maybe[key] = f, f
}

// passed records that a write fenced f passed the fence check without
// writing (a CAS on the wrong version): the record remembers nothing above f.
func (m fenceMem) passed(key string, f int64) {
	if m.maybe[key] > f {
		m.maybe[key] = max(f, m.sure[key])
	}
}

// runM is one run's register.
type runM struct {
	exists  bool // written at least once (it may have expired since)
	version int
	status  types.RunStatus
	exp     time.Time
	updated time.Time // UpdatedAt: the clock of its last write
	fences  fenceMem
	// unindexed: Harness.DropActiveEntry took the run's entry from the
	// active-runs index and no ReindexRun has run since, so ListActiveRuns
	// may miss it (a write since may or may not restore the entry: a backend
	// may trust its own record that the entry exists). surelyUnindexed: the
	// run was live and unfinished then, and nothing has written it since.
	unindexed, surelyUnindexed bool
}

func (r *runM) live(now time.Time) bool { return r.exists && live(r.exp, now) }

// entry is one record of a log (an event or a marker write): its name (the
// event's Message, the marker write's Source), its expiry, and whether it was
// appended corrupt.
type entry struct {
	name    string
	exp     time.Time
	corrupt bool
	phantom bool // a refused write a watcher may see (Harness.PhantomMarkers)
	// unknownExp: a corrupt record whose expiry the model does not know (one
	// Harness.Corrupt appended).
	unknownExp bool
}

// outcome is one result a read from a cursor may have: the good entries it
// returns, in order, and whether it fails with ErrCursorExpired after them
// (gap: the entry after them was dropped). corruptBefore[i] is whether a
// corrupt entry lies before names[i] (after the cursor), which the read must
// report.
type outcome struct {
	names         []string
	idx           []int
	gap           bool
	corruptBefore []bool
	corruptAfter  bool // a live corrupt entry after the last name and before the gap or the end
}

// readFrom returns the outcomes allowed for a read of log from the entry at
// index from (-1: the cursor ""), by the "no gaps" rule of package provider:
// the live entries after the cursor, in order, up to the first one dropped;
// ErrCursorExpired when that one comes first. "" is never expired: it starts at
// the oldest entry retained. Whether a corrupt entry was dropped is not always
// known (what the backend knows of a record it cannot decode is not specified,
// and a harness's raw record may have no expiry at all): where the model
// cannot tell, the outcome forks.
func readFrom(log []entry, from int, now time.Time) []outcome {
	var outs []outcome
	walk := func(i int, o outcome, corrupt bool) {
		for ; i < len(log); i++ {
			e := log[i]
			if e.phantom {
				continue
			}
			isLive := live(e.exp, now)
			if e.corrupt {
				if !isLive || e.unknownExp {
					stop := o
					stop.gap, stop.corruptAfter = true, corrupt
					outs = append(outs, stop) // one fork: it was dropped
				}
				corrupt = true // the other: it is skipped
				continue
			}
			if !isLive {
				o.gap, o.corruptAfter = true, corrupt
				outs = append(outs, o)
				return
			}
			o.names = append(append([]string(nil), o.names...), e.name)
			o.idx = append(append([]int(nil), o.idx...), i)
			o.corruptBefore = append(append([]bool(nil), o.corruptBefore...), corrupt)
			corrupt = false
		}
		o.corruptAfter = corrupt
		outs = append(outs, o)
	}
	if from >= 0 {
		walk(from+1, outcome{}, false)
		return outs
	}
	// "": the first entry retained starts the read; a corrupt one may or may
	// not be retained.
	for i := 0; i <= len(log); i++ {
		if i == len(log) {
			outs = append(outs, outcome{})
			break
		}
		e := log[i]
		if e.phantom {
			continue
		}
		if e.corrupt && (e.unknownExp || !live(e.exp, now)) {
			walk(i, outcome{}, false) // it is retained
			continue                  // or not
		}
		if live(e.exp, now) {
			walk(i, outcome{}, false)
			break
		}
	}
	return outs
}

// leaseM is one lease the simulation acquired, with the slot that holds it.
type leaseM struct {
	lease types.Lease
	slot  int
	exp   time.Time // the model's expiry: acquire or last renew + ttl
}

// model is the reference state of one simulation run.
type model struct {
	now     time.Time
	runs    []*runM
	events  []entry
	evMem   fenceMem // the event log's fence memory
	markers []entry
	mkExp   map[string]time.Time // each marker entry's (by date) expiry
	mkMem   map[string]fenceMem  // each marker entry's (by date) fence memory
	leases  []leaseM
	cur     int // index of the current lease in leases, -1 when none was acquired or it was released
	fence   int64
	wrote   int64 // the highest fence that wrote a record
	evCurs  []savedCursor
	mkCurs  []savedCursor
	serial  int                 // names events and marker writes
	pagings []*pagingM          // open pagings of the active-runs index
	recs    map[string]*recM    // run logs, reruns and replays, by kind/key
	lates   map[string][]lateM  // late arrivals by date, in put order
	lateMem map[string]fenceMem // each late-arrival list's (by date) fence memory
}

// savedCursor is a cursor a read returned, with the index of the entry it names.
type savedCursor struct {
	cursor string
	idx    int
}

func newModel(now time.Time, runs int) *model {
	m := &model{now: now, cur: -1, evMem: newFenceMem(), mkExp: map[string]time.Time{}, mkMem: map[string]fenceMem{}}
	for range runs {
		m.runs = append(m.runs, &runM{fences: newFenceMem()})
	}
	return m
}

// leaseLive reports whether the lease at index i is the current one and live.
func (m *model) leaseLive(i int) bool {
	return i == m.cur && live(m.leases[i].exp, m.now)
}

// newest returns the highest fence of l's key that wrote a record (0 for an
// unfenced write).
func (m *model) newest(l *leaseM) int64 {
	if l == nil {
		return 0
	}
	return m.wrote
}

// leaseSure reports whether the model knows if the lease at index i is live:
// not within early before its expiry.
func (m *model) leaseSure(i int, early time.Duration) bool {
	return i != m.cur || m.now.Before(m.leases[i].exp.Add(-early)) || !m.now.Before(m.leases[i].exp)
}

// instants returns the future instants the model knows of at which something
// expires: the generator's clock jumps land on them exactly.
func (m *model) instants() []time.Time {
	var out []time.Time
	add := func(t time.Time) {
		if !t.IsZero() && t.After(m.now) {
			out = append(out, t)
		}
	}
	for _, r := range m.runs {
		if r.exists {
			add(r.exp)
		}
	}
	for _, e := range m.events {
		add(e.exp)
	}
	for _, e := range m.markers {
		add(e.exp)
	}
	for _, e := range m.mkExp {
		add(e)
	}
	for _, l := range m.leases {
		add(l.exp)
	}
	for _, r := range m.recs {
		if r.exists {
			add(r.exp)
		}
	}
	for _, list := range m.lates {
		for _, la := range list {
			add(la.exp)
		}
	}
	return out
}

// logLive reports whether the newest entry of a log is live: while it is, the
// log exists and its fence memory must hold.
func logLive(log []entry, now time.Time) bool {
	return len(log) > 0 && live(log[len(log)-1].exp, now)
}
