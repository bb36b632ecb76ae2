package sim

import (
	"math/rand/v2"
	"time"

	"github.com/pipestate/pipestate/internal/simengine"
)

// skipped returns the kinds list names (see simengine.Skipped).
func skipped(list string) map[opKind]bool { return simengine.Skipped(list, kindNames[:], opSleep) }

// opKind is what an operation does.
type opKind int

const (
	opPut opKind = iota
	opCAS
	opCreate
	opGet
	opAppend
	opRead
	opFollow
	opMarker
	opWatch
	opAcquire
	opRenew
	opRelease
	opSleep
	opSweep
	opCorrupt
	opRestart
	// Kinds added after corpora were recorded come here, from firstLateKind
	// on: a late kind left out draws nothing, so a line recorded before it
	// existed, given skip=<kind>, generates the sequence it recorded.
	opActive
	opLost     // a write whose reply is lost (Harness.Faults)
	opTimeout  // a run write that times out after it was applied (Harness.Faults)
	opRunLog   // PutRunLog or GetRunLog
	opRerun    // PutRerun or GetRerun
	opReplay   // PutReplay or GetReplay
	opLate     // PutLateArrival or ListLateArrivals
	opCLI      // the CLI's writes: run fail, lock release
	opReindex  // Harness.DropActiveEntry, or ReindexRun
	opReadOnly // a read through a read-only instance (Harness.OpenReadOnly)
	nKinds
)

// firstLateKind is the first kind added after corpora were recorded.
const firstLateKind = opActive

var kindNames = [...]string{"put", "cas", "create", "get", "append", "read", "follow", "marker", "watch",
	"acquire", "renew", "release", "sleep", "sweep", "corrupt", "restart", "active",
	"lost", "timeout", "runlog", "rerun", "replay", "late", "cli", "reindex", "readonly"}

func (k opKind) String() string { return kindNames[k] }

// weights are how often the generator picks each kind.
var weights = [nKinds]int{
	opPut: 8, opCAS: 8, opCreate: 4, opGet: 8,
	opAppend: 10, opRead: 10, opFollow: 4, opMarker: 7, opWatch: 5,
	opAcquire: 7, opRenew: 3, opRelease: 3,
	opSleep: 12, opSweep: 4, opCorrupt: 3, opRestart: 4,
	opActive: 8,
	opLost:   6, opTimeout: 4,
	opRunLog: 5, opRerun: 4, opReplay: 4, opLate: 5, opCLI: 4, opReindex: 4, opReadOnly: 5,
}

// op is one operation. It names what it acts on by index (slot, run, lease,
// saved cursor, variant), resolved modulo what exists when it runs, so that a
// sequence with operations removed still runs.
type op struct {
	kind  opKind
	slot  int
	run   int
	lease int // -1: unfenced; else which lease's fenced view writes (modulo)
	n     int // a small number: a version offset, a cursor pick, a count, a variant, a date
	m     int // another one: a status, a corruption, the jump's shape
	d     time.Duration
	sub   opKind // the write a "lost" or "timeout" operation makes, the read a "readonly" one (from n and the kinds left out)
}

// slots is how many provider instances a run keeps open; runIDs how many runs
// it writes.
const (
	slots  = 3
	runIDs = 2
)

// generate returns the operations of seed.
func generate(seed uint64, n int, h Harness, skip string) []op {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// Swarm testing: each seed enables a random subset of the kinds, with
	// random weights, so that the few kinds a breach needs meet often (a
	// sequence that mixes every kind evenly rarely repeats the three that
	// matter).
	var w [nKinds]int
	total := 0
	off := skipped(skip)
	if h.Faults == nil {
		off[opLost], off[opTimeout] = true, true // nothing to arm: draw nothing
	} else if h.Faults.OpenNoRetry == nil {
		off[opTimeout] = true
	}
	// The writes a fault kind makes are those not left out; none: it draws
	// nothing.
	if h.OpenReadOnly == nil {
		off[opReadOnly] = true
	}
	subs := map[opKind][]opKind{opLost: keep(lostKinds, off), opTimeout: keep(timeoutKinds, off), opReadOnly: keep(readOnlyKinds, off)}
	for k, l := range subs {
		if len(l) == 0 {
			off[k] = true
		}
	}
	for k, base := range weights {
		if opKind(k) >= firstLateKind && off[opKind(k)] {
			continue // draws nothing: see firstLateKind
		}
		if opKind(k) == opSleep || rng.IntN(3) > 0 {
			w[k] = base * (1 + rng.IntN(4))
		}
		if off[opKind(k)] {
			w[k] = 0
		}
		total += w[k]
	}
	nRuns := 1 + rng.IntN(runIDs)
	ret := h.Retention
	spans := []time.Duration{time.Minute, time.Hour}
	for _, d := range []time.Duration{ret.Runs, ret.Events, ret.MarkerLog, ret.CascadeMarkers} {
		if d > 0 {
			spans = append(spans, d)
		}
	}
	for _, v := range h.Variants {
		if v.Retention != nil {
			for _, d := range []time.Duration{v.Retention.Runs, v.Retention.Events, v.Retention.MarkerLog} {
				if d > 0 {
					spans = append(spans, d)
				}
			}
		}
	}
	ops := make([]op, n)
	for i := range ops {
		x := rng.IntN(total)
		k := opKind(0)
		for x >= w[k] {
			x -= w[k]
			k++
		}
		o := op{kind: k, slot: rng.IntN(slots), run: rng.IntN(nRuns), lease: -1, n: rng.IntN(1 << 16), m: rng.IntN(1 << 16)}
		if rng.IntN(2) == 0 {
			o.lease = rng.IntN(1 << 16)
		}
		switch k {
		case opAcquire, opRenew:
			o.d = []time.Duration{time.Minute, time.Hour, 24 * time.Hour}[rng.IntN(3)]
		case opSleep:
			// m%4: 0 a jump of a fraction of a span, 1 to an expiry instant
			// exactly, 2 to just before one, 3 a few seconds.
			span := spans[rng.IntN(len(spans))]
			frac := []float64{0.25, 0.5, 0.75, 1, 1.25, 2}[rng.IntN(6)]
			o.d = time.Duration(float64(span)*frac) + time.Duration(rng.IntN(60))*time.Second
		}
		if l := subs[k]; len(l) > 0 {
			o.sub = l[(o.n>>8)%len(l)] // no draw: a line that skips neither kind replays as recorded
		}
		ops[i] = o
	}
	return ops
}

// keep returns the kinds of l that off does not leave out.
func keep(l []opKind, off map[opKind]bool) []opKind {
	var out []opKind
	for _, k := range l {
		if !off[k] {
			out = append(out, k)
		}
	}
	return out
}
