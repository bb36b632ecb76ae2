// Command observability shows package observe: two orchestrator instances race
// over one backend, each provider decorated with observe.Provider, and the
// OpenTelemetry metrics of both are served in the Prometheus text format on
// /metrics (through the OpenTelemetry Prometheus exporter).
//
// For each date both instances try AcquireLock on the date's evaluation key (one
// acquires it, the other finds it held) and move the date's run PENDING ->
// TRIGGERING -> RUNNING -> COMPLETED with CompareAndSwapRunState, each transition
// from the same version (one swaps, the other gets a conflict). The counters
// pipestate_lock_acquire_total and pipestate_run_cas_total count those outcomes;
// db_client_operation_duration_seconds times every call. From the repository root:
//
//	go run ./examples/observability                        # in-memory backend
//	go run ./examples/observability -redis 127.0.0.1:6379  # a Redis server
//	go run ./examples/observability -dynamodb http://127.0.0.1:8000  # DynamoDB (table PREFIX)
//	go run ./examples/observability -trace                 # also print every span
//
// It prints the address of /metrics (-listen sets it) and serves it until
// interrupted: curl -s http://ADDR/metrics | grep pipestate_
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/observe"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// config is what the flags set.
type config struct {
	listen  string // address of the /metrics server
	backend exbackend.Config
	trace   bool // print the spans to the output
}

func main() {
	var cfg config
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:0", "address of the /metrics server (port 0: any free port)")
	cfg.backend.Register(flag.CommandLine, "observability", false)
	flag.BoolVar(&cfg.trace, "trace", false, "print every span (stdout trace exporter)")
	flag.Parse()
	end := cfg.backend.Begin(flag.CommandLine)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ex, err := run(ctx, os.Stdout, cfg)
	if err != nil {
		log.Fatal(errors.Join(err, end(context.Background(), os.Stdout)))
	}
	fmt.Println("serving /metrics until interrupted")
	<-ctx.Done()
	err = ex.close(context.Background())
	if err := errors.Join(err, end(context.Background(), os.Stdout)); err != nil {
		log.Fatal(err)
	}
}

// run starts the /metrics server on cfg.listen, runs the race on observed
// providers and returns with the server still up; ex.close stops it all.
func run(ctx context.Context, w io.Writer, cfg config) (ex *example, err error) {
	ex = &example{}
	defer func() {
		if err != nil {
			_ = ex.close(context.WithoutCancel(ctx))
		}
	}()

	// Metrics: an OpenTelemetry MeterProvider whose reader is the Prometheus exporter.
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return ex, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	ex.onClose(mp.Shutdown)
	opts := []observe.Option{observe.WithMeterProvider(mp)}

	// Traces, with -trace: every span printed as one JSON line.
	if cfg.trace {
		spans, err := stdouttrace.New(stdouttrace.WithWriter(w))
		if err != nil {
			return ex, err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		ex.onClose(tp.Shutdown)
		opts = append(opts, observe.WithTracerProvider(tp))
	}

	instances, err := open(ctx, ex, cfg.backend)
	if err != nil {
		return ex, err
	}
	if ep := endpoint(cfg.backend); ep != "" { // server.address and server.port on spans and durations
		opts = append(opts, observe.WithEndpoint(ep))
	}
	for i, p := range instances {
		if instances[i], err = observe.Provider(p, opts...); err != nil {
			return ex, err
		}
	}

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return ex, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }() // returns http.ErrServerClosed after Shutdown
	ex.onClose(srv.Shutdown)
	ex.addr = ln.Addr().String()
	fmt.Fprintf(w, "metrics: http://%s/metrics\n", ex.addr)

	return ex, race(ctx, w, instances)
}

// The workload: each date's run goes through transitions, and the evaluation of
// each date is guarded by the lock lockKey(date).
var (
	dates       = []string{"2026-11-20", "2026-11-21", "2026-11-22"}
	transitions = []types.RunStatus{types.RunTriggering, types.RunRunning, types.RunCompleted}
)

func runID(date string) string   { return "orders-" + date }
func lockKey(date string) string { return "eval:orders:" + date }

// race creates a PENDING run per date, runs the instances at once, prints what
// each won and releases the locks it acquired.
func race(ctx context.Context, w io.Writer, instances []provider.Provider) error {
	for _, date := range dates {
		run := types.RunState{RunID: runID(date), PipelineID: "orders", Status: types.RunPending}
		if err := instances[0].PutRunState(ctx, run); err != nil {
			return err
		}
	}
	won := make([]winnings, len(instances))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range instances {
		g.Go(func() (err error) {
			won[i], err = evaluate(gctx, p)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, p := range instances {
		fmt.Fprintf(w, "instance %d: acquired %d of %d locks, swapped %d of %d transitions\n",
			i, len(won[i].locks), len(dates), won[i].swaps, len(dates)*len(transitions))
		for _, key := range won[i].locks {
			if err := p.ReleaseLock(ctx, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// winnings are the locks an instance acquired and the transitions it made.
type winnings struct {
	locks []string
	swaps int
}

// evaluate is one instance's pass over the dates. It tries the date's lock, then
// every transition of the date's run from the version that transition starts at.
// An orchestrator would skip a date whose lock it did not get; this one goes on,
// as one whose lock expired would, and compare-and-swap still lets one through.
func evaluate(ctx context.Context, p provider.Provider) (won winnings, err error) {
	for _, date := range dates {
		ok, err := p.AcquireLock(ctx, lockKey(date), time.Minute)
		if err != nil {
			return won, err
		}
		if ok {
			won.locks = append(won.locks, lockKey(date))
		}
		run := types.RunState{RunID: runID(date), PipelineID: "orders"}
		for version, status := range transitions {
			run.Status = status
			swapped, err := p.CompareAndSwapRunState(ctx, run.RunID, version, run)
			if err != nil {
				return won, err
			}
			if swapped {
				won.swaps++
			}
		}
	}
	return won, nil
}
