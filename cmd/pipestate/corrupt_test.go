package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCorruptRecords: a listing beside a run whose stored value does not decode
// lists the other runs, names the corrupt one on stderr (a line, or with --json
// an object) and exits 1; showing the corrupt run fails with exit 1, naming it.
func TestCorruptRecords(t *testing.T) {
	backends(t, func(t *testing.T, h *harness) {
		if h.corrupt == nil {
			t.Skip("the memory backend stores values, not bytes: provider/memprovider's own tests corrupt it")
		}
		h.corrupt(t, "r-0002")
		for _, args := range [][]string{{"runs", "orders"}, {"runs", "orders", "--json"}} {
			r := h.run(t, args...)
			if r.code != exitError {
				t.Errorf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, exitError, r.stdout, r.stderr)
			}
			for _, run := range []string{"r-0001", "r-0003", "r-0004"} {
				if !strings.Contains(r.stdout, run) {
					t.Errorf("%v: the good run %s is not listed:\n%s", args, run, r.stdout)
				}
			}
			if strings.Contains(r.stdout, "r-0002") {
				t.Errorf("%v: the corrupt run is listed:\n%s", args, r.stdout)
			}
			const summary = "1 corrupt record was skipped (named above); the others are shown"
			if len(args) == 2 {
				for _, want := range []string{"pipestate runs: skipped: provider: corrupt run state r-0002 (", "pipestate runs: " + summary} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("%v: stderr lacks %q:\n%s", args, want, r.stderr)
					}
				}
				continue
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			var skip skippedReport
			var fail errorReport
			if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &skip) != nil || json.Unmarshal([]byte(lines[1]), &fail) != nil {
				t.Fatalf("%v: stderr is not a skipped record's object and an error object:\n%s", args, r.stderr)
			}
			if skip.Kind != "run_state" || skip.ID != "r-0002" || skip.Key == "" || skip.Command != "runs" ||
				!strings.HasPrefix(skip.Skipped, "provider: corrupt run state r-0002 (") {
				t.Errorf("%v: skipped record %+v, want run_state r-0002 of runs, with its key", args, skip)
			}
			if fail.Error != summary || fail.Code != exitError || fail.Command != "runs" {
				t.Errorf("%v: error %+v, want %q with code %d", args, fail, summary, exitError)
			}
		}
		r := h.run(t, "run", "r-0002")
		if r.code != exitError || !strings.Contains(r.stderr, "corrupt run state r-0002 (") {
			t.Errorf("run r-0002: exit %d, want %d and a message naming the corrupt run:\n%s", r.code, exitError, r.stderr)
		}
		if r := h.run(t, "run", "r-0003"); r.code != exitOK {
			t.Errorf("run r-0003 beside a corrupt run: exit %d, want %d:\n%s", r.code, exitOK, r.stderr)
		}
	})
}
