package lincheck

import (
	"fmt"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Unknown is the output of an operation whose outcome the caller does not know:
// the call returned an error that is not one of the operation's documented
// answers. Err is the error's text, shown in the visualisation.
type Unknown struct{ Err string }

func (u Unknown) String() string { return "unknown (" + u.Err + ")" }

// isUnknown reports whether out is the output of an operation with an unknown
// outcome.
func isUnknown(out any) bool {
	_, ok := out.(Unknown)
	return ok
}

// pending marks the return time of an operation with an unknown outcome until
// Operations replaces it.
const pending = -1

// Recorder records a history of operations from concurrent clients. It is safe for
// concurrent use. The zero value is not usable; call NewRecorder.
type Recorder struct {
	start time.Time

	mu      sync.Mutex
	ops     []porcupine.Operation
	clients int
}

// NewRecorder returns an empty Recorder whose clock starts now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// now is the time since the recorder started, on the monotonic clock.
func (r *Recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *Recorder) newID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clients++
	return r.clients - 1
}

// Client returns a new client of the history: one sequential caller (a goroutine).
// A Client must not be used by two goroutines at once.
func (r *Recorder) Client() *Client { return &Client{r: r, id: r.newID()} }

// Client records the operations of one sequential caller.
type Client struct {
	r  *Recorder
	id int
}

// Do records one operation with the given input: it takes the call time, runs op
// and takes the return time. op returns the operation's output, or an error when
// the outcome is unknown; the operation is then recorded with the output
// Unknown{err} and a return time after every other event of the history (see
// Operations), and the client continues under a new client ID, so that the
// visualisation never shows two operations of one ID overlapping. Do returns what
// op returned.
func (c *Client) Do(input any, op func() (any, error)) (any, error) {
	call := c.r.now()
	out, err := op()
	ret := c.r.now()
	o := porcupine.Operation{ClientId: c.id, Input: input, Call: call, Output: out, Return: ret}
	if err != nil {
		o.Output, o.Return = Unknown{Err: err.Error()}, pending
	}
	c.r.mu.Lock()
	c.r.ops = append(c.r.ops, o)
	c.r.mu.Unlock()
	if err != nil {
		c.id = c.r.newID()
	}
	return out, err
}

// Operations returns the history recorded so far. An operation with an unknown
// outcome returns, in it, after every other call and return, which is porcupine's
// way of saying that it may take effect at any time after its call.
func (r *Recorder) Operations() []porcupine.Operation {
	r.mu.Lock()
	ops := append([]porcupine.Operation(nil), r.ops...)
	r.mu.Unlock()
	var last int64
	for _, o := range ops {
		last = max(last, o.Call, o.Return)
	}
	for i := range ops {
		if ops[i].Return == pending {
			ops[i].Return = last + 1
		}
	}
	return ops
}

// Summary counts the operations of a history and those with an unknown outcome,
// for test logs.
func Summary(ops []porcupine.Operation) string {
	n := 0
	for _, o := range ops {
		if isUnknown(o.Output) {
			n++
		}
	}
	return fmt.Sprintf("%d operations, %d with an unknown outcome", len(ops), n)
}
