// Package faults injects network faults into the clients of the networked backends,
// for tests: a reply lost after the server applied the request (so the client
// library retries a write that already happened), connections cut, and, for the AWS
// SDK, throttling and transaction conflicts that never reach the server.
//
// Net wraps the TCP connections a go-redis client dials (Options.Dialer,
// ClusterOptions.Dialer), so one injector covers a standalone server, miniredis and
// every node of a cluster. Transport is an http.RoundTripper for the AWS SDK's
// HTTP client. Faults are armed one at a time and fire once, so a test knows
// exactly which call met which fault.
package faults

import (
	"bytes"
	"context"
	"net"
	"sync"
	"syscall"
)

// Net dials TCP connections whose replies it can drop. The zero value is not
// usable; call NewNet.
type Net struct {
	d net.Dialer

	mu       sync.Mutex
	conns    map[*conn]struct{}
	match    func(request []byte) bool // armed DropReply, nil when none
	dropped  int
	refuse   bool
	requests int
}

// NewNet returns a Net with nothing armed.
func NewNet() *Net { return &Net{conns: make(map[*conn]struct{})} }

// Dial dials addr and tracks the connection. Its signature is go-redis's Dialer.
func (n *Net) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	refuse := n.refuse
	n.mu.Unlock()
	if refuse {
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	c, err := n.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	fc := &conn{Conn: c, n: n}
	n.mu.Lock()
	n.conns[fc] = struct{}{}
	n.mu.Unlock()
	return fc, nil
}

// DropReply arms a one-shot fault: the next request written on any connection for
// which match returns true is sent to the server, and the reply to it is never
// delivered: the connection is closed, so the client sees a network error after the
// server applied the request. A later DropReply replaces one that has not fired.
func (n *Net) DropReply(match func(request []byte) bool) {
	n.mu.Lock()
	n.match = match
	n.mu.Unlock()
}

// Disarm cancels an armed DropReply that has not fired.
func (n *Net) Disarm() { n.DropReply(nil) }

// Dropped reports how many replies have been dropped.
func (n *Net) Dropped() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropped
}

// KillAll closes every open connection, as a server restart or a network partition
// would; requests in flight fail and their outcome is unknown to the client.
func (n *Net) KillAll() {
	n.mu.Lock()
	cs := make([]*conn, 0, len(n.conns))
	for c := range n.conns {
		cs = append(cs, c)
	}
	n.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

// Refuse(true) takes the server away, as a crash or a partition would: every open
// connection is closed and every dial fails with ECONNREFUSED until Refuse(false).
func (n *Net) Refuse(on bool) {
	n.mu.Lock()
	n.refuse = on
	n.mu.Unlock()
	if on {
		n.KillAll()
	}
}

// Requests reports how many writes (requests or pipelines of them) went out on
// the connections it dialed.
func (n *Net) Requests() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.requests
}

// Contains returns a matcher for requests that contain every one of parts, e.g. a
// key name and a command or script argument. The match is on the raw request bytes
// and is case-sensitive; go-redis sends command names in lower case ("evalsha",
// "set").
func Contains(parts ...string) func([]byte) bool {
	return func(req []byte) bool {
		for _, p := range parts {
			if !bytes.Contains(req, []byte(p)) {
				return false
			}
		}
		return true
	}
}

// take reports whether req fires the armed fault, disarming it if so.
func (n *Net) take(req []byte) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.requests++
	if n.match == nil || !n.match(req) {
		return false
	}
	n.match = nil
	n.dropped++
	return true
}

func (n *Net) forget(c *conn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
}

// conn is a tracked connection. After a write that fired the fault, the next read
// waits for the server's reply to arrive (so the request was applied), discards
// it, closes the connection and fails.
type conn struct {
	net.Conn
	n *Net

	mu   sync.Mutex
	drop bool
}

func (c *conn) Write(b []byte) (int, error) {
	fire := c.n.take(b)
	n, err := c.Conn.Write(b)
	if fire && err == nil {
		c.mu.Lock()
		c.drop = true
		c.mu.Unlock()
	}
	return n, err
}

func (c *conn) Read(b []byte) (int, error) {
	c.mu.Lock()
	drop := c.drop
	c.mu.Unlock()
	if !drop {
		return c.Conn.Read(b)
	}
	_, _ = c.Conn.Read(b) // the reply: the server has applied the request
	_ = c.Close()
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

func (c *conn) Close() error {
	c.n.forget(c)
	return c.Conn.Close()
}
