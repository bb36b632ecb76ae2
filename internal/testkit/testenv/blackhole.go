package testenv

import (
	"net"
	"sync"
	"testing"
)

// BlackHole listens on a loopback port and accepts every connection without ever
// reading from it or writing to it: a server that takes connections and never
// answers, as a hung or black-holed Redis or DynamoDB endpoint does. It returns
// the listener's host:port; t's cleanup closes the listener and every connection.
func BlackHole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
