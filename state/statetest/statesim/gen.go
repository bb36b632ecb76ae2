package statesim

import (
	"math/rand/v2"
	"time"

	"github.com/pipestate/pipestate/internal/simengine"
	"github.com/pipestate/pipestate/state"
)

// opKind is what an operation does.
type opKind int

const (
	opMerge opKind = iota
	opOnce
	opMany
	opGet
	opGetMany
	opCacheGet
	opSleep
	opSweep
	opCorrupt
	opRestart
	// Kinds added after corpora were recorded come here, from firstLateKind
	// on: a late kind left out draws nothing, so a line recorded before it
	// existed, given skip=<kind>, generates the sequence it recorded.
	opSeen // Deduper.MarkSeen or Release (Harness.OpenDeduper)
	opLost // a write whose reply is lost (Harness.Faults)
	nKinds
)

// firstLateKind is the first kind added after corpora were recorded.
const firstLateKind = opSeen

var kindNames = [...]string{"merge", "once", "many", "get", "getmany", "cacheget", "sleep", "sweep", "corrupt", "restart", "seen", "lost"}

func (k opKind) String() string { return kindNames[k] }

// weights are how often the generator picks each kind.
var weights = [nKinds]int{
	opMerge: 12, opOnce: 8, opMany: 6, opGet: 10, opGetMany: 5, opCacheGet: 5,
	opSleep: 12, opSweep: 3, opCorrupt: 1, opRestart: 3,
	opSeen: 6, opLost: 6,
}

// skipped returns the kinds list names (see simengine.Skipped).
func skipped(list string) map[opKind]bool { return simengine.Skipped(list, kindNames[:], opSleep) }

// op is one operation. It names what it acts on by index (slot, key, lease,
// variant, expiry instant), resolved when it runs, so that a sequence with
// operations removed still runs.
type op struct {
	kind  opKind
	slot  int
	key   int   // which of keys
	lease int   // -1: unfenced; else lease key leaseKeys[lease%2], fence 1+lease/2%4
	delta int64 // -5..5
	ttl   int   // which of ttls
	n     int   // a small number: an event, the keys of a batch or read, a variant, an instant
	m     int   // another: the shape of a clock jump
	d     time.Duration
	sub   opKind // the write a "lost" operation makes
}

// slots is how many store instances a run keeps open.
const slots = 3

// keys are the keys a run merges into: two buckets of one entity (a backend
// may keep one fence memory for an entity) and another entity.
var keys = []state.Key{{Entity: "a"}, {Entity: "a", Bucket: 7}, {Entity: "b:{x}"}}

// ttls are the ttls of merges (0: no expiry).
var ttls = []time.Duration{0, time.Minute, time.Hour, 4 * time.Hour}

// events are the event IDs of MergeUpdateOnce.
var events = []string{"e0", "e1", "e2", "e3"}

// seenIDs are the event IDs of the Deduper.
var seenIDs = []string{"s0", "s1", "s2"}

var leaseKeys = []string{"job", "other"}

// fenceOf is the lease key and fence of an op's lease.
func fenceOf(lease int) (string, int64) {
	return leaseKeys[lease%len(leaseKeys)], 1 + int64(lease/len(leaseKeys)%4)
}

// generate returns the operations of seed.
func generate(seed uint64, n int, h Harness, skip string) []op {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// Swarm testing, as providertest/sim: each seed enables a random subset of
	// the kinds, with random weights.
	var w [nKinds]int
	total := 0
	off := skipped(skip)
	if h.OpenDeduper == nil {
		off[opSeen] = true // nothing to call: draw nothing
	}
	lost := lostKinds(h, off)
	if h.Faults == nil || len(lost) == 0 {
		off[opLost] = true
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
	spans := []time.Duration{time.Minute, time.Hour, 4 * time.Hour, dedupTTL(h.DedupTTL)}
	for _, v := range h.Variants {
		spans = append(spans, dedupTTL(v.DedupTTL))
	}
	ops := make([]op, n)
	for i := range ops {
		x := rng.IntN(total)
		k := opKind(0)
		for x >= w[k] {
			x -= w[k]
			k++
		}
		o := op{kind: k, slot: rng.IntN(slots), key: rng.IntN(len(keys)), lease: -1,
			delta: int64(rng.IntN(11)) - 5, ttl: rng.IntN(len(ttls)), n: rng.IntN(1 << 16), m: rng.IntN(1 << 16)}
		if rng.IntN(2) == 0 {
			o.lease = rng.IntN(1 << 8)
		}
		switch k {
		case opSleep:
			// m%4: 0 a fraction of a span, 1 to an expiry instant exactly, 2 to
			// a second before one, 3 a few seconds. Whole seconds, so that
			// every backend's resolution (DynamoDB: 1 s) is exact.
			span := spans[rng.IntN(len(spans))]
			frac := []float64{0.25, 0.5, 0.75, 1, 1.25, 2}[rng.IntN(6)]
			o.d = (time.Duration(float64(span)*frac) + time.Duration(rng.IntN(60))*time.Second).Truncate(time.Second)
		case opSweep:
			o.d = time.Duration(rng.IntN(48*3600)) * time.Second
		case opLost:
			o.sub = lost[(o.n>>8)%len(lost)] // no draw: lines that skip lost replay as recorded
		}
		ops[i] = o
	}
	return ops
}

func dedupTTL(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return state.DefaultDedupTTL
}
