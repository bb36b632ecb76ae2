package statetest

import (
	"sync"
	"testing"
	"time"
)

// Rounds of the one-winner races: at least MinRaceRounds, then more until
// RaceBudget has passed, at most MaxRaceRounds. Every round starts its callers
// from a barrier, so a check-then-act backend loses a round quickly.
const (
	MinRaceRounds = 3
	MaxRaceRounds = 200
	RaceBudget    = 500 * time.Millisecond
)

// raceRounds runs round until enough rounds have run or t has failed.
func raceRounds(t *testing.T, round func(i int)) {
	t.Helper()
	start := time.Now()
	for i := 0; i < MaxRaceRounds && (i < MinRaceRounds || time.Since(start) < RaceBudget); i++ {
		round(i)
		if t.Failed() {
			return
		}
	}
}

// together runs f(g) for g in [0, n) on n goroutines released at once from a
// barrier, and waits for all of them.
func together(n int, f func(g int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	for g := range n {
		done.Go(func() {
			ready.Done()
			<-start
			f(g)
		})
	}
	ready.Wait()
	close(start)
	done.Wait()
}
