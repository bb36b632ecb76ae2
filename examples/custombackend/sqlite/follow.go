package sqlite

import (
	"context"
	"sync"
	"time"
)

// SQLite cannot notify a reader in another process of a commit, so FollowEvents and
// WatchCascadeMarkers poll: after a read that finds nothing they wait firstPoll,
// then twice as long after each empty read, up to the provider's maximum poll
// interval (WithMaxPollInterval), and back to firstPoll after a read that finds
// something. A write through any Provider open on the same path in this process
// also wakes them at once, so only writers in other processes wait for a poll.

// firstPoll is the wait after the first empty read.
const firstPoll = 10 * time.Millisecond

// followPage is how many records a follower or watcher reads in one query.
const followPage = 256

// wakeMu guards wakeups and every wakeup's fields.
var wakeMu sync.Mutex

// wakeups is the wake-up of each database path open in this process, by absolute
// path; an entry lives while a Provider has its path open.
var wakeups = map[string]*wakeup{}

// wakeup is a broadcast to the followers of one database file: each write closes ch
// and replaces it.
type wakeup struct {
	path string
	refs int // Providers open on path
	ch   chan struct{}
}

// openWakeup returns path's wake-up, counting one more Provider open on it.
func openWakeup(path string) *wakeup {
	wakeMu.Lock()
	defer wakeMu.Unlock()
	w := wakeups[path]
	if w == nil {
		w = &wakeup{path: path, ch: make(chan struct{})}
		wakeups[path] = w
	}
	w.refs++
	return w
}

// release counts one Provider fewer on w's path and wakes its followers, so those
// of a stopped Provider end without waiting for a poll.
func (w *wakeup) release() {
	w.notify()
	wakeMu.Lock()
	defer wakeMu.Unlock()
	if w.refs--; w.refs == 0 {
		delete(wakeups, w.path)
	}
}

// wait returns a channel that is closed by the next notify.
func (w *wakeup) wait() <-chan struct{} {
	wakeMu.Lock()
	defer wakeMu.Unlock()
	return w.ch
}

// notify wakes every follower of w's file; writers call it after their commit.
func (w *wakeup) notify() {
	wakeMu.Lock()
	defer wakeMu.Unlock()
	close(w.ch)
	w.ch = make(chan struct{})
}

// follow yields what read returns until read returns nothing, then waits for a
// wake-up, the next poll or ctx's end, and reads again; it ends after yielding an
// error (read's, or ctx's). read reads the records after the last one it returned.
func follow[R any](ctx context.Context, p *Provider, read func() ([]R, error), yield func(R, error) bool) {
	var zero R
	delay := firstPoll
	for {
		woken := p.wake.wait() // before the read: a commit after it wakes the wait below
		recs, err := read()
		if err != nil {
			yield(zero, err)
			return
		}
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
		if len(recs) > 0 {
			delay = firstPoll
			continue
		}
		timer := time.NewTimer(delay)
		select {
		case <-woken:
		case <-timer.C:
			delay = min(2*delay, p.maxPoll)
		case <-ctx.Done():
			timer.Stop()
			yield(zero, ctx.Err())
			return
		}
		timer.Stop()
	}
}
