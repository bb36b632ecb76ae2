package fakeclock

import (
	"sync"
	"testing"
	"time"
)

func TestAdvance(t *testing.T) {
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	c := New(start)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { c.Advance(time.Second); _ = c.Now() })
	}
	wg.Wait()
	if got := c.Now(); !got.Equal(start.Add(100 * time.Second)) {
		t.Errorf("Now = %v, want start+100s", got)
	}
}
