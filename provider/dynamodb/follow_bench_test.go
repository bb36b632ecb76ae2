package dynamodb_test

import (
	"context"
	"iter"
	"slices"
	"strconv"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/provider/dynamodb"
	"github.com/pipestate/pipestate/types"
)

// The delivery benchmarks measure, on DynamoDB Local with the default poll
// interval (20 ms doubling to 1 s), how long a follower or watcher takes to yield
// a record after the write that made it returned, and what an idle one costs:
//
//	go test -run '^$' -bench 'Delivery|Idle' -benchtime 10x ./provider/dynamodb
//
// "idle" writes once the reader has waited for 2 s, so it polls at its slowest;
// "busy" writes as soon as the previous record arrived. They report the mean and
// the largest delay (ms/delivery, max-ms); BenchmarkIdleRequests reports the
// Queries an idle reader sends per minute, measured over 10 s.

// deliveryDelays writes b.N times with write(i) after pause, each time timing how
// long recs takes to yield the record, and reports the mean and largest delay.
func deliveryDelays[R any](b *testing.B, recs iter.Seq2[R, error], pause time.Duration, write func(i int) error) {
	next, stop := iter.Pull2(recs)
	defer stop()
	var delays []time.Duration
	for i := range b.N {
		time.Sleep(pause)
		if err := write(i); err != nil {
			b.Fatal(err)
		}
		wrote := time.Now()
		if _, err, ok := next(); !ok || err != nil {
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

// delivery runs the idle and busy cases of one reader.
func delivery[R any](b *testing.B, read func(ctx context.Context, p *dynamodb.Provider) iter.Seq2[R, error], write func(p *dynamodb.Provider, i int) error) {
	e := benchEnv(b)
	p := openOn(b, e.client, e)
	for _, c := range []struct {
		name  string
		pause time.Duration
	}{{"idle", 2 * time.Second}, {"busy", 0}} {
		b.Run(c.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			base := time.Now().UnixNano()
			deliveryDelays(b, read(ctx, p), c.pause, func(i int) error { return write(p, int(base)+i) })
		})
	}
}

func BenchmarkFollowDelivery(b *testing.B) {
	pipeline := "follow-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	delivery(b, func(ctx context.Context, p *dynamodb.Provider) iter.Seq2[types.EventRecord, error] {
		recs, err := p.ReadEventsSince(ctx, pipeline, "", 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		cursor := ""
		if len(recs) > 0 {
			cursor = recs[len(recs)-1].StreamID
		}
		return p.FollowEvents(ctx, pipeline, cursor)
	}, func(p *dynamodb.Provider, i int) error {
		return p.AppendEvent(context.Background(), types.Event{Kind: "k", PipelineID: pipeline, Message: strconv.Itoa(i)})
	})
}

func BenchmarkWatchDelivery(b *testing.B) {
	delivery(b, func(ctx context.Context, p *dynamodb.Provider) iter.Seq2[types.CascadeMarkerRecord, error] {
		return p.WatchCascadeMarkers(ctx, strconv.FormatInt(1<<62, 10)) // past every entry: only new ones
	}, func(p *dynamodb.Provider, i int) error {
		return p.WriteCascadeMarker(context.Background(), "watch", "", "2026-01-01", "up"+strconv.Itoa(i))
	})
}

// BenchmarkIdleRequests counts the requests of one follower and one watcher that
// find nothing, over 10 s from their start, as requests per minute; the first
// second, at the short intervals, is about 7 of them.
func BenchmarkIdleRequests(b *testing.B) {
	if testing.Short() {
		b.Skip("takes 10 s per reader")
	}
	hc, n := testenv.CountingHTTPClient()
	e := testEnv(b, func(o *ddb.Options) { o.HTTPClient = hc })
	p := openOn(b, e.client, e)
	const window = 10 * time.Second
	for _, c := range []struct {
		name  string
		start func(ctx context.Context) func()
	}{
		{"follow", func(ctx context.Context) func() {
			next, stop := iter.Pull2(p.FollowEvents(ctx, "idle", ""))
			go next()
			return stop
		}},
		{"watch", func(ctx context.Context) func() {
			next, stop := iter.Pull2(p.WatchCascadeMarkers(ctx, ""))
			go next()
			return stop
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				ctx, cancel := context.WithTimeout(b.Context(), window)
				n.Reset()
				stop := c.start(ctx)
				<-ctx.Done()
				got := n.Load()
				cancel()
				stop()
				b.ReportMetric(float64(got)*float64(time.Minute)/float64(window), "requests/idle-min")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}
