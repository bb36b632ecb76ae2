package cache_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	"github.com/pipestate/pipestate/state/memstate"
)

// New returns a state.Store[V] that keeps the optional interfaces of the store
// it wraps: assert the one you need, here state.OnceStore for exactly-once
// merges through the cache. Reads are served from memory for at most the
// staleness; a write through the cache drops its keys, so the process reads its
// own writes.
func Example() {
	ctx := context.Background()
	views, err := memstate.New[int64](monoid.Sum[int64]{}) // or a state/redisstate, state/ddbstate store
	if err != nil {
		log.Fatal(err)
	}
	s, err := cache.New(views, cache.WithStaleness(100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	once, ok := s.(state.OnceStore[int64]) // true exactly when views is one
	if !ok {
		log.Fatal("the wrapped store has no MergeUpdateOnce")
	}
	home := state.Key{Entity: "page:/home"}
	for range 2 { // event evt-1 delivered twice
		if _, err := once.MergeUpdateOnce(ctx, "evt-1", home, 1, time.Hour); err != nil {
			log.Fatal(err)
		}
	}
	n, _, err := s.Get(ctx, home) // from the store; the next Get within 100ms from memory
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n)
	// Output: 1
}
