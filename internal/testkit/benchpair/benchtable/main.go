// Command benchtable reads `go test -bench` output of benchpair benchmarks on
// standard input and prints a Markdown table: one row per benchmark with the
// library's and the raw code's time per call and their ratio, each the median over
// the repeated runs (-count), the ratio with its spread (the medians of the runs'
// 25th and 75th percentiles), the allocations per call, and the server's CPU time
// per call of each side where the benchmark reports it (server-cpu-us/op, "–"
// where not). Benchmarks that do not report raw-ns/op are left out.
//
// With -readme FILE it also replaces the text between the lines
// "<!-- bench:begin -->" and "<!-- bench:end -->" of FILE with the table.
//
//	go test -run '^$' -bench . -count 5 ./provider/redisprovider/ | go run ./internal/testkit/benchpair/benchtable
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	readme := flag.String("readme", "", "a file whose bench:begin/bench:end section gets the table")
	flag.Parse()
	log.SetFlags(0)
	runs, err := parse(os.Stdin)
	if err != nil {
		log.Fatal(err)
	}
	table := format(runs)
	fmt.Print(table)
	if *readme != "" {
		if err := replaceSection(*readme, table); err != nil {
			log.Fatal(err)
		}
	}
}

// results are the parsed runs: the machine line and, per benchmark in order of
// first appearance, each run's metrics by unit.
type results struct {
	cpu   string
	names []string
	runs  map[string][]map[string]float64
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// parse reads benchmark output: "pkg:" and "cpu:" header lines and result lines
// "BenchmarkName-8  N  value unit  value unit ...".
func parse(r io.Reader) (results, error) {
	res := results{runs: map[string][]map[string]float64{}}
	pkg := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg = strings.TrimPrefix(line, "pkg: github.com/pipestate/pipestate/")
		case strings.HasPrefix(line, "cpu: "):
			res.cpu = strings.TrimPrefix(line, "cpu: ")
		case strings.HasPrefix(line, "Benchmark"):
			f := strings.Fields(line)
			if len(f) < 4 || len(f)%2 != 0 {
				continue // a benchmark's name line before its sub-benchmarks, or a log line
			}
			m := map[string]float64{}
			for i := 2; i+1 < len(f); i += 2 {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					return res, fmt.Errorf("benchtable: %q: %v", line, err)
				}
				m[f[i+1]] = v
			}
			if _, ok := m["raw-ns/op"]; !ok {
				continue
			}
			name := pkg + " " + procsSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
			if _, seen := res.runs[name]; !seen {
				res.names = append(res.names, name)
			}
			res.runs[name] = append(res.runs[name], m)
		}
	}
	return res, sc.Err()
}

// format renders the table.
func format(res results) string {
	var b strings.Builder
	if res.cpu != "" {
		fmt.Fprintf(&b, "CPU: %s.\n\n", res.cpu)
	}
	b.WriteString("| package | benchmark | runs | pipestate µs/call | raw µs/call | ratio | ratio p25–p75 | allocs/call pipestate / raw | server CPU µs/call pipestate / raw |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range res.names {
		runs := res.runs[name]
		med := func(unit string) float64 {
			xs := make([]float64, len(runs))
			for i, m := range runs {
				xs[i] = m[unit]
			}
			slices.Sort(xs)
			if len(xs)%2 == 1 {
				return xs[len(xs)/2]
			}
			return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
		}
		server := "–"
		if _, ok := runs[0][serverCPU]; ok {
			server = fmt.Sprintf("%.1f / %.1f", med(serverCPU), med("raw-"+serverCPU))
		}
		pkg, bench, _ := strings.Cut(name, " ")
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %.1f | %.2f | %.2f–%.2f | %.0f / %.0f | %s |\n",
			pkg, bench, len(runs), med("ns/op")/1e3, med("raw-ns/op")/1e3, med("ratio"),
			med("ratio-p25"), med("ratio-p75"), med("allocs/op"), med("raw-allocs/op"), server)
	}
	return b.String()
}

// serverCPU is the unit of testenv.RedisServerCPU's meter.
const serverCPU = "server-cpu-us/op"

const (
	beginMark = "<!-- bench:begin -->\n"
	endMark   = "<!-- bench:end -->\n"
)

// replaceSection puts table between the marks of the file at path.
func replaceSection(path, table string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	before, rest, ok := bytes.Cut(data, []byte(beginMark))
	_, after, ok2 := bytes.Cut(rest, []byte(endMark))
	if !ok || !ok2 {
		return fmt.Errorf("benchtable: %s has no %q ... %q section", path, strings.TrimSpace(beginMark), strings.TrimSpace(endMark))
	}
	out := slices.Concat(before, []byte(beginMark), []byte(table), []byte(endMark), after)
	return os.WriteFile(path, out, 0o644)
}
