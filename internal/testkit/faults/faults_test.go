package faults_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/faults"
)

// A dropped reply reaches the server and go-redis retries it: INCR runs twice.
func TestNetDropReply(t *testing.T) {
	m := miniredis.RunT(t)
	n := faults.NewNet()
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr(), Dialer: n.Dial})
	defer c.Close()
	ctx := context.Background()
	n.DropReply(faults.Contains("incr", "ctr"))
	v, err := c.Incr(ctx, "ctr").Result()
	if err != nil {
		t.Fatal(err)
	}
	if v != 2 || n.Dropped() != 1 {
		t.Fatalf("INCR after a lost reply = %d with %d dropped; want 2 (applied, then retried) and 1", v, n.Dropped())
	}
	if v, err := c.Incr(ctx, "ctr").Result(); err != nil || v != 3 {
		t.Fatalf("a second INCR = %d, %v; want 3 (the fault fires once)", v, err)
	}
	n.KillAll()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping after KillAll: %v (the pool should redial)", err)
	}
}

func TestTransport(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	tr := faults.NewTransport()
	c := &http.Client{Transport: tr}
	post := func(op, body string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		return c.Do(req)
	}
	tr.DropReply(faults.Op("PutItem", "k1"))
	if _, err := post("GetItem", "k1"); err != nil {
		t.Fatalf("unmatched op: %v", err)
	}
	if _, err := post("PutItem", "k1"); err == nil {
		t.Fatal("matched PutItem: want a connection error")
	}
	if hits.Load() != 2 || tr.Dropped() != 1 {
		t.Fatalf("hits %d, dropped %d; want 2 (the dropped request was applied) and 1", hits.Load(), tr.Dropped())
	}
	tr.Reject(1, faults.Op("PutItem"), faults.Throttled)
	resp, err := post("PutItem", "k2")
	if err != nil || resp.StatusCode != 400 || resp.Header.Get("X-Amzn-Errortype") != faults.Throttled {
		t.Fatalf("rejected: %v %v", resp, err)
	}
	if hits.Load() != 2 {
		t.Fatal("a rejected request reached the server")
	}
	if resp, err := post("PutItem", "k3"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the one rejection: %v %v", resp, err)
	}
}
