package sim

import (
	"fmt"
	"testing"
	"time"
)

// TestReadFrom pins the referee's "no gaps" rule on small logs.
func TestReadFrom(t *testing.T) {
	now := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	live, dropped := now.Add(time.Hour), now // an entry expires at now: dropped
	cases := []struct {
		name string
		log  []entry
		from int
		want string
	}{
		{"all live from \"\"", []entry{{name: "a", exp: live}, {name: "b", exp: live}}, -1, "[a b]"},
		{"leading dropped skipped from \"\"", []entry{{name: "a", exp: dropped}, {name: "b", exp: live}}, -1, "[b]"},
		{"gap after the cursor", []entry{{name: "a", exp: live}, {name: "b", exp: dropped}, {name: "c", exp: live}}, 0, "[] gap"},
		{"entries before the gap", []entry{{name: "a", exp: live}, {name: "b", exp: live}, {name: "c", exp: dropped}, {name: "d", exp: live}}, 0, "[b] gap"},
		{"dropped cursor, nothing dropped after", []entry{{name: "a", exp: dropped}, {name: "b", exp: live}}, 0, "[b]"},
		{"a live corrupt entry is skipped", []entry{{name: "a", exp: live}, {name: "x", exp: live, corrupt: true}, {name: "b", exp: live}}, 0, "[b]"},
		{"a dropped corrupt entry forks", []entry{{name: "a", exp: live}, {name: "x", exp: dropped, corrupt: true}, {name: "b", exp: live}}, 0, "[] gap | [b]"},
		{"a phantom is never expected", []entry{{name: "a", exp: live}, {name: "p", phantom: true}, {name: "b", exp: live}}, -1, "[a b]"},
	}
	for _, c := range cases {
		got := ""
		for i, o := range readFrom(c.log, c.from, now) {
			if i > 0 {
				got += " | "
			}
			got += fmt.Sprint(o.names)
			if o.gap {
				got += " gap"
			}
		}
		if got != c.want {
			t.Errorf("%s: readFrom = %s, want %s", c.name, got, c.want)
		}
	}
}

// TestPending pins how long a stream is given: the required wait while every
// outcome still needs more, the quiet one while an outcome is complete and
// another goes on, none once nothing may follow.
func TestPending(t *testing.T) {
	ws := waits{required: time.Minute, quiet: time.Millisecond}
	gapOrB := []outcome{{gap: true}, {names: []string{"b"}}}
	maybeGap := []outcome{{names: []string{"a"}}, {names: []string{"a"}, gap: true}}
	cases := []struct {
		name  string
		outs  []outcome
		fresh []string
		want  time.Duration
	}{
		{"an entry or the error must come", gapOrB, nil, time.Minute},
		{"the entry came", gapOrB, []string{"b"}, 0},
		{"the entry must come", maybeGap, nil, time.Minute},
		{"an optional error", maybeGap, []string{"a"}, time.Millisecond},
		{"nothing to yield", []outcome{{}}, nil, 0},
		{"a name no outcome has", maybeGap, []string{"x"}, 0},
	}
	for _, c := range cases {
		if got := ws.pending(c.outs, c.fresh); got != c.want {
			t.Errorf("%s: pending = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestGenHashSeesGeneratorChanges pins what a corpus line's gen= catches: a
// change of weights, of the harness's retentions, of the operation count.
func TestGenHashSeesGeneratorChanges(t *testing.T) {
	h := Harness{}
	h.Retention.Runs = time.Hour
	base := genHash(generate(1, 60, h, ""))
	if again := genHash(generate(1, 60, h, "")); again != base {
		t.Fatalf("genHash is not deterministic: %s then %s", base, again)
	}
	old := weights
	weights[opPut]++
	changed := genHash(generate(1, 60, h, ""))
	weights = old
	if changed == base {
		t.Error("a weight change kept the hash")
	}
	// A retention reaches the sequence through the sleeps that draw it as
	// their span: some seed among the first ten draws it.
	h2 := h
	h2.Retention.Runs = 2 * time.Hour
	seen := false
	for seed := uint64(1); seed <= 10 && !seen; seed++ {
		seen = genHash(generate(seed, 60, h2, "")) != genHash(generate(seed, 60, h, ""))
	}
	if !seen {
		t.Error("a retention change kept the hash of each of seeds 1 to 10")
	}
	if genHash(generate(1, 61, h, "")) == base {
		t.Error("another operation count kept the hash")
	}
}
