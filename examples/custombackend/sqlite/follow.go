package sqlite

import (
	"context"
	"sync"
	"time"

	"github.com/pipestate/pipestate/provider"
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

// poll is the provider.Poller of one follow or watch over read, which returns the
// records after the last it returned: Wait returns at a wake-up, at the next poll
// (provider.PollDelay from firstPoll up to the provider's maximum poll interval) or
// when ctx ends.
func poll[R any](p *Provider, read func(ctx context.Context) ([]R, error)) provider.Poller[R] {
	var woken <-chan struct{}
	return provider.Poller[R]{
		Read: func(ctx context.Context) ([]R, error) {
			woken = p.wake.wait() // before the read: a commit after it wakes the wait
			return read(ctx)
		},
		Wait: func(ctx context.Context, idle int) error {
			timer := time.NewTimer(provider.PollDelay(firstPoll, p.maxPoll, idle))
			defer timer.Stop()
			select {
			case <-woken:
			case <-timer.C:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		},
	}
}
