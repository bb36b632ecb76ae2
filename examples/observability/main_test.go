package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pipestate/pipestate/internal/testkit/testenv"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
)

// TestObservability runs the example, scrapes its /metrics over HTTP and checks
// that the counters say what the race did: one swap and one conflict per
// transition, one acquired and one held lock per date.
func TestObservability(t *testing.T) {
	for _, tc := range []struct {
		name, system string
		cfg          func(t *testing.T) config
	}{
		{"memory", "memory", func(t *testing.T) config { return config{} }},
		{"memory-trace", "memory", func(t *testing.T) config { return config{trace: true} }},
		{"miniredis", "redis", func(t *testing.T) config {
			return config{backend: exbackend.Config{Redis: miniredis.RunT(t).Addr(), Prefix: "observability"}}
		}},
		{"redis", "redis", func(t *testing.T) config {
			return config{backend: exbackend.Config{Redis: testenv.RedisAddr(t), Prefix: testenv.RedisPrefix(t)}}
		}},
		{"dynamodb", "aws.dynamodb", func(t *testing.T) config {
			return config{backend: exbackend.Config{DynamoDB: testenv.DynamoDBEndpoint(t), Prefix: testenv.DynamoDBPrefix(t), Timeout: time.Minute}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg(t)
			cfg.listen = "127.0.0.1:0"
			var out bytes.Buffer
			ex, err := run(t.Context(), &out, cfg)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			defer func() {
				if err := ex.close(context.Background()); err != nil {
					t.Errorf("close: %v", err)
				}
			}()
			if want := "metrics: http://" + ex.addr + "/metrics\n"; !strings.HasPrefix(out.String(), want) {
				t.Errorf("output starts %q, want %q", out.String(), want)
			}
			text, families := scrape(t, ex.addr)
			// The Prometheus names of the instruments: dots become underscores, the
			// unit s a _seconds suffix, and counters end in _total.
			// Each metric has a line with these labels among its others (labels
			// are sorted by name, and a backend adds its own: DynamoDB's table is
			// db_collection_name, which sorts first).
			for metric, labels := range map[string][]string{
				"db_client_operation_duration_seconds_bucket": {`db_operation_name="CompareAndSwapRunState"`, `db_system_name="` + tc.system + `"`},
				"pipestate_run_cas_total":                     {`db_system_name="` + tc.system + `"`},
				"pipestate_lock_acquire_total":                {`db_system_name="` + tc.system + `"`},
			} {
				if !hasLine(text, metric, labels) {
					t.Errorf("/metrics has no %s line with the labels %s", metric, strings.Join(labels, ", "))
				}
			}

			instances, transitions := 2, len(dates)*len(transitions)
			system := map[string]string{"db_system_name": tc.system}
			lock := map[string]string{"db_system_name": tc.system, "pipestate_lock_kind": "lock"}
			for _, c := range []struct {
				name   string
				labels map[string]string
				want   uint64
			}{
				{"pipestate_run_cas_total", with(system, "pipestate_outcome", "swapped"), uint64(transitions)},
				{"pipestate_run_cas_total", with(system, "pipestate_outcome", "conflict"), uint64((instances - 1) * transitions)},
				{"pipestate_lock_acquire_total", with(lock, "pipestate_outcome", "acquired"), uint64(len(dates))},
				{"pipestate_lock_acquire_total", with(lock, "pipestate_outcome", "held"), uint64((instances - 1) * len(dates))},
				{"pipestate_lock_release_total", with(lock, "pipestate_outcome", "released"), uint64(len(dates))},
				{"db_client_operation_duration_seconds", with(system, "db_operation_name", "CompareAndSwapRunState"), uint64(instances * transitions)},
				{"db_client_operation_duration_seconds", with(system, "db_operation_name", "AcquireLock"), uint64(instances * len(dates))},
			} {
				if got := count(t, families, c.name, c.labels); got != c.want {
					t.Errorf("%s %v = %d, want %d", c.name, c.labels, got, c.want)
				}
			}

			// The instances' own tallies agree: every lock and transition won once.
			var locks, swaps int
			for line := range strings.Lines(out.String()) {
				var i, l, s, nl, ns int
				const format = "instance %d: acquired %d of %d locks, swapped %d of %d transitions\n"
				if _, err := fmt.Sscanf(line, format, &i, &l, &nl, &s, &ns); err == nil {
					locks, swaps = locks+l, swaps+s
				}
			}
			if locks != len(dates) || swaps != transitions {
				t.Errorf("the instances report %d locks and %d swaps, want %d and %d:\n%s", locks, swaps, len(dates), transitions, out.String())
			}

			if cfg.trace {
				if got := strings.Count(out.String(), `{"Name":"CompareAndSwapRunState"`); got != instances*transitions {
					t.Errorf("%d CompareAndSwapRunState spans printed, want %d", got, instances*transitions)
				}
			}
		})
	}
}

// scrape gets http://addr/metrics and returns it as text and parsed.
func scrape(t *testing.T, addr string) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("GET /metrics: %s, Content-Type %q\n%s", resp.Status, ct, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bufio.NewReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return string(body), families
}

// count returns the value of the counter, or the sample count of the histogram,
// named name whose labels include labels; it fails the test unless exactly one
// series matches.
func count(t *testing.T, families map[string]*dto.MetricFamily, name string, labels map[string]string) uint64 {
	t.Helper()
	var found []*dto.Metric
	for _, m := range families[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		if matches(have, labels) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d series of %s match %v", len(found), name, labels)
	}
	switch families[name].GetType() {
	case dto.MetricType_COUNTER:
		return uint64(found[0].GetCounter().GetValue())
	case dto.MetricType_HISTOGRAM:
		return found[0].GetHistogram().GetSampleCount()
	}
	t.Fatalf("%s is a %v", name, families[name].GetType())
	return 0
}

// matches reports whether have holds every label of want.
func matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// with returns labels plus k=v.
func with(labels map[string]string, k, v string) map[string]string {
	out := maps.Clone(labels)
	out[k] = v
	return out
}

// TestMain fails the package when its tests leave tables or keys behind.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestDeadServer: on a Redis that accepts connections and never answers, the
// example fails within its timeout instead of hanging (4s of slack for a loaded
// machine; without a timeout it took 5s, go-redis's default dial timeout).
func TestDeadServer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	start := time.Now()
	ex, err := run(t.Context(), &bytes.Buffer{}, config{listen: "127.0.0.1:0", backend: exbackend.Config{Redis: testenv.BlackHole(t), Prefix: "observability", Timeout: timeout}})
	if err == nil {
		_ = ex.close(context.Background())
	}
	if took := time.Since(start); err == nil || took > timeout+4*time.Second {
		t.Errorf("took %v, error %v; want an error within %v", took, err, timeout+4*time.Second)
	}
}

// hasLine reports whether text, a Prometheus exposition, has a line of metric
// whose labels include every one of labels.
func hasLine(text, metric string, labels []string) bool {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(line, l)
		}
		if all {
			return true
		}
	}
	return false
}
