// Package benchpair measures a library call against the hand-written client code
// that does the same work ("raw"), interleaved in rounds inside one benchmark, so
// that the drift and noise of a shared machine fall on both alike and the
// library's overhead reads as a ratio.
//
// A benchmark calls Run (or RunParallel) once. Both functions run b.N calls of
// each variant, split into rounds of alternating order (library first in even
// rounds, raw first in odd ones), and report:
//
//	ns/op                 the library's time per call: the median over rounds
//	raw-ns/op             the raw code's, likewise
//	ratio                 the median over rounds of library time / raw time
//	ratio-p25, ratio-p75  the spread of that ratio over rounds
//	allocs/op, B/op       the library's allocations per call (all rounds)
//	raw-allocs/op, raw-B/op
//	<unit>/op, raw-<unit>/op  for each Meter given: how much its reading grew per
//	                      call of each variant (all rounds), such as the time a
//	                      database server spent on the calls' commands
//
// RunParallel runs each round's calls on several goroutines at once and reports
// the time per call of the whole round (wall time / calls), so its ns/op is the
// inverse of throughput.
//
// The command internal/testkit/benchpair/benchtable turns `go test -bench` output of such
// benchmarks into the table of the README (make bench).
package benchpair

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Rounds is the most rounds a benchmark is split into; fewer when b.N is smaller.
const Rounds = 40

// Meter is a cumulative reading outside the process that both variants' calls
// add to, such as the time a server has spent on commands. Its growth over each
// variant's rounds is reported per call, so nothing else may add to it while the
// benchmark runs.
type Meter struct {
	Unit string                  // the metric's unit, reported as <Unit>/op
	Read func() (float64, error) // the reading now; an error fails the benchmark
}

// Run measures lib against raw, each called b.N times with i = 0, 1, ...; a
// returned error fails the benchmark.
func Run(b *testing.B, lib, raw func(i int) error, meters ...Meter) {
	b.Helper()
	RunParallel(b, 1, func(_, i int) error { return lib(i) }, func(_, i int) error { return raw(i) }, meters...)
}

// RunParallel is Run with each round's calls spread over workers goroutines: every
// i in 0..b.N-1 is called once per variant, by one worker w (0..workers-1).
func RunParallel(b *testing.B, workers int, lib, raw func(w, i int) error, meters ...Meter) {
	b.Helper()
	if workers < 1 {
		b.Fatalf("benchpair: %d workers", workers)
	}
	b.ReportAllocs() // prints allocs/op and B/op: the library's, reported below
	rounds := min(Rounds, max(1, b.N/workers))
	per := (b.N + rounds - 1) / rounds
	libM, rawM := measure{meters: meters}, measure{meters: meters}
	next := 0 // the first i of the next round, shared by both variants
	for r := range rounds {
		n := min(per, b.N-r*per)
		if n <= 0 {
			break
		}
		first, second := &libM, &rawM
		fa, fb := lib, raw
		if r%2 == 1 {
			first, second, fa, fb = second, first, fb, fa
		}
		first.round(b, workers, next, n, fa)
		second.round(b, workers, next, n, fb)
		next += n
	}
	ratios := make([]float64, len(libM.ns))
	for i := range ratios {
		ratios[i] = libM.ns[i] / rawM.ns[i]
	}
	b.ReportMetric(median(libM.ns), "ns/op")
	b.ReportMetric(median(rawM.ns), "raw-ns/op")
	b.ReportMetric(median(ratios), "ratio")
	b.ReportMetric(quantile(ratios, 0.25), "ratio-p25")
	b.ReportMetric(quantile(ratios, 0.75), "ratio-p75")
	b.ReportMetric(float64(libM.allocs)/float64(next), "allocs/op")
	b.ReportMetric(float64(libM.bytes)/float64(next), "B/op")
	b.ReportMetric(float64(rawM.allocs)/float64(next), "raw-allocs/op")
	b.ReportMetric(float64(rawM.bytes)/float64(next), "raw-B/op")
	for j, m := range meters {
		b.ReportMetric(libM.metered[j]/float64(next), m.Unit+"/op")
		b.ReportMetric(rawM.metered[j]/float64(next), "raw-"+m.Unit+"/op")
	}
}

// measure accumulates one variant's rounds.
type measure struct {
	ns            []float64 // per round: ns per call
	allocs, bytes uint64
	meters        []Meter
	metered       []float64 // per meter: growth over this variant's rounds
}

// read returns every meter's reading.
func (m *measure) read(b *testing.B) []float64 {
	b.Helper()
	vs := make([]float64, len(m.meters))
	for j, mt := range m.meters {
		v, err := mt.Read()
		if err != nil {
			b.Fatalf("benchpair: meter %s: %v", mt.Unit, err)
		}
		vs[j] = v
	}
	return vs
}

// round makes calls from..from+n-1 of f on workers goroutines and records the
// time per call and the allocations.
func (m *measure) round(b *testing.B, workers, from, n int, f func(w, i int) error) {
	b.Helper()
	var before, after runtime.MemStats
	metered := m.read(b)
	runtime.ReadMemStats(&before)
	errs := make([]error, workers)
	start := time.Now()
	if workers == 1 {
		for i := from; i < from+n; i++ {
			if errs[0] = f(0, i); errs[0] != nil {
				break
			}
		}
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := from + w; i < from+n; i += workers {
					if errs[w] = f(w, i); errs[w] != nil {
						return
					}
				}
			})
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if m.metered == nil {
		m.metered = make([]float64, len(m.meters))
	}
	for j, v := range m.read(b) {
		m.metered[j] += v - metered[j]
	}
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	m.ns = append(m.ns, float64(elapsed.Nanoseconds())/float64(n))
	m.allocs += after.Mallocs - before.Mallocs
	m.bytes += after.TotalAlloc - before.TotalAlloc
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile is the q-quantile of xs by linear interpolation between closest ranks.
func quantile(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// Modes runs one sub-benchmark of b per worker count n of workers, named "seq" for
// n = 1 and "parallel<n>" otherwise: RunParallel with n goroutines of the pair that
// mk returns for n workers (mk prepares what they need; calls of different workers
// must not conflict).
func Modes(b *testing.B, workers []int, mk func(b *testing.B, workers int) (lib, raw func(w, i int) error), meters ...Meter) {
	b.Helper()
	for _, n := range workers {
		name := "seq"
		if n > 1 {
			name = "parallel" + strconv.Itoa(n)
		}
		b.Run(name, func(b *testing.B) {
			lib, raw := mk(b, n)
			RunParallel(b, n, lib, raw, meters...)
		})
	}
}
