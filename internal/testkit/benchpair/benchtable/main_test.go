package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/pipestate/pipestate/provider/redisprovider
cpu: Test CPU @ 2.00GHz
BenchmarkCAS
BenchmarkCAS/redis
BenchmarkCAS/redis-2         	    3000	     40000 ns/op	         2.000 allocs/op	       100.0 B/op	         1.100 ratio	         1.000 ratio-p25	         1.200 ratio-p75	         1.000 raw-B/op	         1.000 raw-allocs/op	     36000 raw-ns/op
BenchmarkCAS/redis-2         	    3000	     60000 ns/op	         4.000 allocs/op	       100.0 B/op	         1.300 ratio	         1.200 ratio-p25	         1.400 ratio-p75	         1.000 raw-B/op	         3.000 raw-allocs/op	     46000 raw-ns/op
BenchmarkGetTraits/redis-2   	    3000	     30000 ns/op	         2.000 allocs/op	       100.0 B/op	         1.000 ratio	         0.9000 ratio-p25	         1.100 ratio-p75	         1.000 raw-B/op	         2.000 raw-allocs/op	     30000 raw-ns/op	        12.00 server-cpu-us/op	        10.00 raw-server-cpu-us/op
BenchmarkCoalescer-2         	  100000	       250 ns/op	   4000000 deltas/s
PASS
`

func TestTable(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := format(res)
	want := "CPU: Test CPU @ 2.00GHz.\n\n" +
		"| package | benchmark | runs | pipestate µs/call | raw µs/call | ratio | ratio p25–p75 | allocs/call pipestate / raw | server CPU µs/call pipestate / raw |\n" +
		"|---|---|---|---|---|---|---|---|---|\n" +
		"| provider/redisprovider | CAS/redis | 2 | 50.0 | 41.0 | 1.20 | 1.10–1.30 | 3 / 2 | – |\n" +
		"| provider/redisprovider | GetTraits/redis | 1 | 30.0 | 30.0 | 1.00 | 0.90–1.10 | 2 / 2 | 12.0 / 10.0 |\n"
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}

	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte("intro\n<!-- bench:begin -->\nold\n<!-- bench:end -->\nrest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(path, "new\n"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "intro\n<!-- bench:begin -->\nnew\n<!-- bench:end -->\nrest\n" {
		t.Errorf("README after replace:\n%s", data)
	}
	if err := replaceSection(filepath.Join(t.TempDir(), "x"), "new\n"); err == nil {
		t.Error("replace in a missing file: no error")
	}
	if err := os.WriteFile(path, []byte("no marks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(path, "new\n"); err == nil || !strings.Contains(err.Error(), "bench:begin") {
		t.Errorf("replace without marks: %v", err)
	}
}
