package testenv

import "sync/atomic"

// Counter counts network round trips. It is safe for concurrent use. The zero value
// is a counter at 0.
type Counter struct{ n atomic.Int64 }

// Load returns the number of round trips counted since creation or the last Reset.
func (c *Counter) Load() int64 { return c.n.Load() }

// Reset sets the count back to 0.
func (c *Counter) Reset() { c.n.Store(0) }

func (c *Counter) add() { c.n.Add(1) }
