package redisprovider_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

func Example() {
	ctx := context.Background()
	srv, err := miniredis.Run() // any Redis: a server, a cluster, miniredis in tests
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer client.Close()

	p, err := redisprovider.New(client, redisprovider.WithKeyPrefix("orders"))
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(ctx); err != nil { // preloads the Lua scripts
		log.Fatal(err)
	}
	defer p.Stop(ctx) // leaves client open

	run := types.RunState{RunID: "run-1", PipelineID: "daily-orders", Status: types.RunPending}
	if err := p.PutRunState(ctx, run); err != nil {
		log.Fatal(err)
	}
	run.Status = types.RunRunning
	won, _ := p.CompareAndSwapRunState(ctx, "run-1", 0, run)
	again, _ := p.CompareAndSwapRunState(ctx, "run-1", 0, run)
	got, _ := p.GetRunState(ctx, "run-1")
	fmt.Println(won, again, got.Status, got.Version)

	held, _ := p.AcquireLock(ctx, "trigger/daily-orders", time.Minute)
	fmt.Println("lock:", held)
	// Output:
	// true false RUNNING 1
	// lock: true
}
