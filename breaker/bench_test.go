package breaker_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/breaker"
)

// BenchmarkOpen is the cost of a call the open breaker refuses, through the
// Redis hook (a GET on a client whose server is up: nothing is sent), beside
// the same GET through a closed breaker and without one.
//
//	go test -run '^$' -bench Open ./breaker/
func BenchmarkOpen(b *testing.B) {
	addr := miniredis.RunT(b).Addr()
	client := func(b *testing.B, br *breaker.Breaker) *goredis.Client {
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		b.Cleanup(func() { _ = c.Close() })
		if br != nil {
			c.AddHook(br.RedisHook())
		}
		return c
	}
	get := func(b *testing.B, c *goredis.Client) {
		for b.Loop() {
			_ = c.Get(b.Context(), "k").Err()
		}
	}
	b.Run("none", func(b *testing.B) { get(b, client(b, nil)) })
	b.Run("closed", func(b *testing.B) {
		br, _ := breaker.New("closed")
		get(b, client(b, br))
	})
	b.Run("open", func(b *testing.B) {
		br, _ := breaker.New("open", breaker.WithFailures(1), breaker.WithOpenFor(time.Hour))
		_ = br.Do(func() error { return &timeoutErr{} })
		if br.State() != breaker.Open {
			b.Fatal("not open")
		}
		get(b, client(b, br))
	})
}

// timeoutErr is a net.Error timeout, a failure to IsFailure.
type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }
