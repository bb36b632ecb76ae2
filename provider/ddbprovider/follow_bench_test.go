package ddbprovider_test

import (
	"context"
	"errors"
	"iter"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// The delivery benchmarks measure, on DynamoDB Local with the default poll
// interval (20 ms doubling to 1 s), how long a follower or watcher takes to yield
// a record after the write that made it returned, and what an idle one costs:
//
//	go test -run '^$' -bench 'Delivery|Idle' -benchtime 20x ./provider/ddbprovider
//
// "idle" writes once the reader has waited 2 to 3 s (at random, so the write
// falls anywhere between two polls at the slowest interval); "busy" writes as soon
// as the previous record arrived. They report the mean and the largest delay
// (ms/delivery, max-ms); BenchmarkIdleRequests reports the Queries an idle reader
// sends per minute.

// deliveryDelays writes b.N times with write after pause (plus up to a second at
// random when pause > 0) and times how long recs, ranged over by a goroutine of its
// own from the start, takes to yield each record after its write returned; it
// reports the mean and largest delay.
func deliveryDelays[R any](b *testing.B, recs iter.Seq2[R, error], pause time.Duration, write func() error) {
	arrived := make(chan error, 1)
	go func() {
		for _, err := range recs {
			arrived <- err
			if err != nil {
				return
			}
		}
	}()
	var delays []time.Duration
	for range b.N {
		if pause > 0 {
			time.Sleep(pause + rand.N(time.Second))
		}
		if err := write(); err != nil {
			b.Fatal(err)
		}
		wrote := time.Now()
		if err := <-arrived; err != nil {
			b.Fatalf("the reader ended: %v", err)
		}
		delays = append(delays, time.Since(wrote))
	}
	var sum time.Duration
	for _, d := range delays {
		sum += d
	}
	b.ReportMetric(float64(sum.Milliseconds())/float64(len(delays)), "ms/delivery")
	b.ReportMetric(float64(slices.Max(delays).Milliseconds()), "max-ms")
	b.ReportMetric(0, "ns/op")
}

// delivery runs the idle and busy cases of a reader that read starts after the
// given number of records, on a table where write makes the only records.
func delivery[R any](b *testing.B, read func(ctx context.Context, p *ddbprovider.Provider, after int) iter.Seq2[R, error], write func(p *ddbprovider.Provider) error) {
	e := benchEnv(b)
	p := openOn(b, e.client, e)
	written := 0
	for _, c := range []struct {
		name  string
		pause time.Duration
	}{{"idle", 2 * time.Second}, {"busy", 0}} {
		b.Run(c.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			deliveryDelays(b, read(ctx, p, written), c.pause, func() error {
				written++
				return write(p)
			})
		})
	}
}

func BenchmarkFollowDelivery(b *testing.B) {
	delivery(b, func(ctx context.Context, p *ddbprovider.Provider, after int) iter.Seq2[types.EventRecord, error] {
		return p.FollowEvents(ctx, "follow", cursorAfter(after))
	}, func(p *ddbprovider.Provider) error {
		return p.AppendEvent(context.Background(), types.Event{Kind: "k", PipelineID: "follow"})
	})
}

func BenchmarkWatchDelivery(b *testing.B) {
	delivery(b, func(ctx context.Context, p *ddbprovider.Provider, after int) iter.Seq2[types.CascadeMarkerRecord, error] {
		return p.WatchCascadeMarkers(ctx, cursorAfter(after))
	}, func(p *ddbprovider.Provider) error {
		return p.WriteCascadeMarker(context.Background(), "watch", "", "2026-01-01", "up")
	})
}

// cursorAfter is the cursor of record n of a log (the start for 0).
func cursorAfter(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// BenchmarkIdleRequests counts the requests of one follower and one watcher that
// find nothing, over 10 s after a warm-up of 5 s (by then they poll at the longest
// interval; the first 1.3 s, at the shorter ones, cost 7), as requests per minute.
func BenchmarkIdleRequests(b *testing.B) {
	if testing.Short() {
		b.Skip("takes 10 s per reader")
	}
	hc, n := testenv.CountingHTTPClient()
	e := testEnv(b, func(o *ddb.Options) { o.HTTPClient = hc })
	p := openOn(b, e.client, e)
	const warmUp, window = 5 * time.Second, 10 * time.Second
	for _, c := range []struct {
		name string
		seq  func(ctx context.Context) iter.Seq2[types.EventRecord, error]
	}{
		{"follow", func(ctx context.Context) iter.Seq2[types.EventRecord, error] { return p.FollowEvents(ctx, "idle", "") }},
		{"watch", func(ctx context.Context) iter.Seq2[types.EventRecord, error] {
			return func(yield func(types.EventRecord, error) bool) {
				for _, err := range p.WatchCascadeMarkers(ctx, "") {
					yield(types.EventRecord{}, err)
				}
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				ctx, cancel := context.WithTimeout(b.Context(), warmUp+window)
				var got int64
				time.AfterFunc(warmUp, n.Reset)
				for _, err := range c.seq(ctx) { // ends with ctx's error
					got = n.Load()
					if !errors.Is(err, context.DeadlineExceeded) {
						b.Fatalf("an idle reader yielded %v", err)
					}
				}
				cancel()
				b.ReportMetric(float64(got)*float64(time.Minute)/float64(window), "requests/idle-min")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}
