package breaker_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/breaker"
	"github.com/pipestate/pipestate/provider/redisprovider"
)

// One breaker per endpoint, attached to the client that the provider and the
// stores share.
func Example() {
	b, err := breaker.New("orders-redis")
	if err != nil {
		panic(err)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
	rdb.AddHook(b.RedisHook())
	p, err := redisprovider.New(rdb)
	if err != nil {
		panic(err)
	}
	if _, err := p.GetRunState(context.Background(), "run-1"); errors.Is(err, pipestate.ErrUnavailable) {
		fmt.Println("Redis is failing; nothing was sent")
	}
}

// The DynamoDB client takes the breaker and, recommended with it, the SDK's
// adaptive retry mode.
func ExampleBreaker_DynamoDB() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	b, err := breaker.New("orders-dynamodb")
	if err != nil {
		panic(err)
	}
	client := ddb.NewFromConfig(cfg, b.DynamoDB(), func(o *ddb.Options) {
		o.Retryer = retry.NewAdaptiveMode()
	})
	_ = client // give it to provider/ddbprovider.New and the state/ddbstate stores
}
