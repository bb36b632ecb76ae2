// Command counters counts page views per one-minute window and unique visitors per
// hour from a click stream in which 20% of the clicks are delivered twice, and the
// totals come out exact anyway:
//
//   - a view is added with MergeUpdateOnce, which claims the click's ID and adds 1 in
//     one atomic Redis script: a redelivered click is skipped, even across restarts;
//   - visitors go into a HyperLogLog sketch per hour through a Coalescer, which turns
//     thousands of compare-and-swap merges into a few writes (see run for what it
//     trades);
//   - state.ReadRange merges a range of windows with one read: the views of the last
//     hour, and the visitors of both hours (a sketch union, not a sum).
//
// It runs on an embedded miniredis; -redis host:port uses a real server and
// -dynamodb URL DynamoDB (the stores of state/ddbstate, tables PREFIX-views,
// PREFIX-visitors and PREFIX-dedup, created when missing). Run it twice against one
// server and the second run applies nothing:
//
//	go run ./examples/counters
//	go run ./examples/counters -redis localhost:6379
//	go run ./examples/counters -dynamodb http://127.0.0.1:8000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/redisstate"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
)

const (
	ttl       = 48 * time.Hour // how long windows live
	batchSize = 500            // deliveries per queue poll
	workers   = 8              // deliveries processed at once
)

var (
	perMinute = state.Tumbling(time.Minute)
	perHour   = state.Tumbling(time.Hour)
)

func main() {
	var cfg exbackend.Config
	cfg.Register(flag.CommandLine, "counters", false)
	flag.Parse()
	end := cfg.Begin(flag.CommandLine)
	err := connectAndRun(os.Stdout, cfg)
	if err := errors.Join(err, end(context.Background(), os.Stdout)); err != nil {
		log.Fatal(err)
	}
}

// connectAndRun counts on the backend cfg names (an embedded miniredis by
// default), each wait for the server bounded by cfg.Timeout.
func connectAndRun(w io.Writer, cfg exbackend.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sketch, err := hll.New(hll.DefaultPrecision)
	if err != nil {
		return err
	}
	var views state.OnceStore[int64]
	var visitors state.Store[[]byte]
	if cfg.DynamoDB != "" {
		client := cfg.DynamoDBClient()
		viewsT, visitorsT, dedupT := cfg.Prefix+"-views", cfg.Prefix+"-visitors", cfg.Prefix+"-dedup"
		for _, create := range []func() error{
			func() error { return ddbstate.CreateStoreTable(ctx, client, viewsT) },
			func() error { return ddbstate.CreateStoreTable(ctx, client, visitorsT) },
			func() error { return ddbstate.CreateDedupTable(ctx, client, dedupT) },
		} {
			if err := create(); err != nil {
				return fmt.Errorf("create tables: %w", err)
			}
		}
		if views, err = ddbstate.NewInt64SumStore(client, viewsT, ddbstate.WithDedupTable(dedupT)); err != nil {
			return err
		}
		if visitors, err = ddbstate.NewBytesStore(client, visitorsT, sketch); err != nil {
			return err
		}
	} else {
		client, closeClient, err := cfg.RedisClient()
		if err != nil {
			return err
		}
		defer closeClient()
		if views, err = redisstate.NewInt64SumStore(client, cfg.Prefix+":views"); err != nil {
			return err
		}
		if visitors, err = redisstate.NewBytesStore(client, cfg.Prefix+":visitors", sketch); err != nil {
			return err
		}
	}
	defer views.Close()
	defer visitors.Close()
	return run(ctx, w, views, visitors, sketch)
}

// run consumes the demo stream in batches, as a queue consumer would, and prints
// the totals it reads back from the stores.
func run(ctx context.Context, w io.Writer, views state.OnceStore[int64], visitors state.Store[[]byte], sketch hll.Monoid) error {
	// The coalescer merges the sketch deltas of a batch in memory and writes each
	// hour's sketch once per Flush. It trades two things: deltas buffered when the
	// process dies are lost, so the batch is acknowledged to the queue only after
	// Flush (the queue then redelivers an unflushed batch); and a write that times out
	// after Redis applied it is retried, so a delta may be applied twice. A sketch
	// union is idempotent, so neither a redelivery nor a repeated write changes it.
	// A sum is not: views bypass the coalescer and use MergeUpdateOnce.
	visitorsFront, err := state.NewCoalescer(visitors, sketch, state.WithFlushInterval(0), state.WithWriteTTL(ttl))
	if err != nil {
		return err
	}
	defer visitorsFront.Close(context.WithoutCancel(ctx))

	deliveries := demo.deliveries()
	var applied atomic.Int64
	for batch := range slices.Chunk(deliveries, batchSize) {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(workers)
		for _, c := range batch {
			g.Go(func() error {
				minute, err := perMinute.Key(c.Page, c.At)
				if err != nil {
					return err
				}
				ok, err := views.MergeUpdateOnce(gctx, c.ID, minute, 1, ttl)
				if err != nil {
					return err
				}
				if ok {
					applied.Add(1)
				}
				// Add the visitor even for a redelivery: if the first delivery's
				// batch was never flushed, this is the only copy that counts.
				hour, err := perHour.Key("site", c.At)
				if err != nil {
					return err
				}
				return visitorsFront.Add(gctx, hour, sketch.Delta(c.User))
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		if err := visitorsFront.Flush(ctx); err != nil {
			return err
		}
		// Acknowledge the batch to the queue here.
	}
	fmt.Fprintf(w, "%d deliveries: %d views applied, %d redeliveries skipped\n",
		len(deliveries), applied.Load(), int64(len(deliveries))-applied.Load())
	st := visitorsFront.Stats()
	fmt.Fprintf(w, "%d visitor sketch deltas coalesced into %d store writes\n", st.Deltas, st.Writes)

	end := demo.End() // ReadRange reads the half-open [from, to)
	lastHour := demo.End().Add(-time.Hour)
	fmt.Fprintf(w, "%-10s %6s %10s\n", "page", "views", "last hour")
	var total, recent int64
	for _, page := range demo.Pages {
		all, err := state.ReadRange(ctx, views, monoid.Sum[int64]{}, page, perMinute, demo.Start, end)
		if err != nil {
			return err
		}
		last, err := state.ReadRange(ctx, views, monoid.Sum[int64]{}, page, perMinute, lastHour, end)
		if err != nil {
			return err
		}
		total, recent = total+all, recent+last
		fmt.Fprintf(w, "%-10s %6d %10d\n", page, all, last)
	}
	fmt.Fprintf(w, "%-10s %6d %10d\n", "all", total, recent)

	for _, r := range [][2]time.Time{{demo.Start, lastHour}, {lastHour, demo.End()}, {demo.Start, demo.End()}} {
		b, err := state.ReadRange(ctx, visitors, sketch, "site", perHour, r[0], r[1])
		if err != nil {
			return err
		}
		n, err := hll.Estimate(b)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "unique visitors %s-%s: ~%d\n", r[0].Format("15:04"), r[1].Format("15:04"), n)
	}
	return nil
}
