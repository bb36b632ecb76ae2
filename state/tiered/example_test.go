package tiered_test

import (
	"context"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/tiered"
)

// DynamoDB is the source of truth, Redis the cache every process shares (L2),
// and state/cache the process's own (L1). Each layer keeps the optional
// interfaces of the one it wraps: assert state.OnceStore once, on the top.
// (Not run: it needs DynamoDB and Redis.)
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	sums, err := ddbstate.NewInt64SumStore(ddb.NewFromConfig(cfg), "views", ddbstate.WithDedupTable("views-dedup"))
	if err != nil {
		log.Fatal(err)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
	l2, err := tiered.New[int64](sums, rdb, "views-l2")
	if err != nil {
		log.Fatal(err)
	}
	views, err := cache.New(l2, cache.WithStaleness(100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer views.Close()
	once := views.(state.OnceStore[int64]) // sums is one, so every layer is
	if _, err := once.MergeUpdateOnce(ctx, "evt-1", state.Key{Entity: "page:/home"}, 1, 24*time.Hour); err != nil {
		log.Fatal(err)
	}
}
