package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// progressEvery is how often a progress line is redrawn.
const progressEvery = 250 * time.Millisecond

// progress is a line on stderr, redrawn in place, that says how many of total
// steps of a long read are done. It is shown only when stderr is a terminal
// (cli.stderrTTY), so that a pipe or a file gets nothing but the command's own
// messages; a nil *progress shows nothing.
type progress struct {
	w     io.Writer
	what  string
	total int
	n     atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
}

// progress starts the progress line of total steps of what ("pipelines' runs
// read"), or returns nil when stderr is not a terminal.
func (in *inv) progress(what string, total int) *progress {
	if !in.stderrTTY {
		return nil
	}
	p := &progress{w: in.stderr, what: what, total: total, stop: make(chan struct{})}
	p.draw()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
	return p
}

func (p *progress) draw() {
	fmt.Fprintf(p.w, "\r\x1b[K%d of %d %s", p.n.Load(), p.total, p.what)
}

// step counts one step done.
func (p *progress) step() {
	if p != nil {
		p.n.Add(1)
	}
}

// done stops the redraws and erases the line.
func (p *progress) done() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	fmt.Fprint(p.w, "\r\x1b[K")
}

// isTerminal reports whether w is a terminal (not merely a character device:
// /dev/null is one, and gets no progress).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
