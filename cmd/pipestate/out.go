package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/pipestate/pipestate/provider"
)

// inv is one invocation of a command: its flags and, once connected, its backend.
type inv struct {
	*cli
	conn    connFlags
	json    bool
	yes     bool
	audit   auditFlags // an audited write's --reason and --as
	target  target
	backend backend
	opened  []provider.Provider
	headed  bool // the backend line was printed
}

// connect resolves the connection flags and dials the backend, once.
func (in *inv) connect(ctx context.Context) (backend, error) {
	if in.backend != nil {
		return in.backend, nil
	}
	t, err := in.conn.resolve(in.getenv)
	if err != nil {
		return nil, err
	}
	in.target = t
	b, err := in.dial(ctx, t, in.now)
	if err != nil {
		return nil, err
	}
	in.backend = b
	return b, nil
}

// provider connects and opens the provider with a random lock owner.
func (in *inv) provider(ctx context.Context) (provider.Provider, error) {
	return in.providerOf(ctx, "")
}

// providerOf connects and opens the provider with lock owner owner ("": random):
// read-only (WithReadOnly) unless the command is a write given --yes, so that a
// read never writes, also where the backend repairs on reads that may write.
func (in *inv) providerOf(ctx context.Context, owner string) (provider.Provider, error) {
	b, err := in.connect(ctx)
	if err != nil {
		return nil, err
	}
	p, err := b.provider(owner, in.yes) // read-only unless a write's --yes
	if err != nil {
		return nil, err
	}
	in.opened = append(in.opened, p)
	return p, nil
}

// close stops what the invocation opened.
func (in *inv) close() {
	for _, p := range in.opened {
		_ = p.Stop(context.Background())
	}
	if in.backend != nil {
		in.backend.close()
	}
}

// Human-readable output is written by head, say, table rows and fields, and
// errors by cli.report; each shows what the command did not write itself as a
// text. JSON output is written by emit alone.

// head prints the backend line once, before the first human-readable output.
func (in *inv) head() {
	if !in.headed && !in.json && in.backend != nil {
		fmt.Fprintf(in.stdout, "backend: %s\n", text(in.backend.String()))
		in.headed = true
	}
}

// say prints one line of human-readable output after the backend line: format,
// the command's own words, with the arguments' strings shown as texts.
func (in *inv) say(format string, a ...any) {
	in.head()
	fmt.Fprintf(in.stdout, format+"\n", texts(a)...)
}

// emit prints v as one line of JSON, with the runes that are not printable
// escaped (jsonText).
func (in *inv) emit(v any) error { return emitTo(in.stdout, v) }

// emitTo writes v to w as one line of JSON, as emit does.
func emitTo(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonText(b.Bytes()))
	return err
}

// emitAll prints each of vs as one line of JSON.
func emitAll[T any](in *inv, vs []T) error {
	for _, v := range vs {
		if err := in.emit(v); err != nil {
			return err
		}
	}
	return nil
}

// table is an aligned table on stdout.
type table struct{ tw *tabwriter.Writer }

// table starts a table with the header cells (none: a key/value block).
func (in *inv) table(header ...string) *table {
	in.head()
	t := &table{tabwriter.NewWriter(in.stdout, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// maxCell is the most runes a table cell shows.
const maxCell = 60

// row adds a row; each cell is shown as a text, cut at maxCell runes, "-" when
// empty.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, cut(c, maxCell))
	}
	fmt.Fprintln(t.tw)
}

// flush writes the table out.
func (t *table) flush() error { return t.tw.Flush() }

// fields prints a key/value block of pairs; keys and values are shown as texts,
// values whole, "-" when empty.
func (in *inv) fields(pairs ...string) error {
	t := in.table()
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(t.tw, "%s\t%s\n", text(pairs[i]), cell(pairs[i+1]))
	}
	return t.flush()
}

// cell is s shown as a text, "-" when empty.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return text(s).String()
}

// cut is cell(s) cut to at most n runes, ending in "…" when cut.
func cut(s string, n int) string {
	s = cell(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// ago is t relative to the clock: "3m ago", "in 2h"; "-" for the zero time.
func (in *inv) ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := in.now().Sub(t)
	if d < 0 {
		return "in " + approx(-d)
	}
	return approx(d) + " ago"
}

// agoPtr is ago for an optional time.
func (in *inv) agoPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return in.ago(*t)
}

// stamp is t in UTC with its relative time: "2026-11-21T03:00:00Z (3h ago)".
func (in *inv) stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339) + " (" + in.ago(t) + ")"
}

// stampPtr is stamp for an optional time.
func (in *inv) stampPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return in.stamp(*t)
}

// approx is d rounded down to its largest units: 45s, 12m, 5h12m, 3d.
func approx(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 10*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return strconv.Itoa(h) + "h"
		}
		return fmt.Sprintf("%dh%dm", h, m)
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// dur is a configured duration without zero trailing units: 1h, 1h30m, 45s.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// compact is v as compact JSON ("" for nil or empty maps), its runes that are not
// printable escaped as in --json (jsonText), so that a text shows it as it is.
func compact[M ~map[string]any](v M) string {
	if len(v) == 0 {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return string(jsonText(b))
}

// checkLimit rejects a --limit below 1.
func checkLimit(n int) error {
	if n < 1 {
		return usagef("--limit %d: give at least 1", n)
	}
	return nil
}

// requirePipeline returns a not-found error unless pipeline id is registered; the
// lists of a pipeline call it when they come back empty, to tell an unknown
// pipeline from one with nothing to list.
func requirePipeline(ctx context.Context, p provider.Provider, id, what string) error {
	cfg, err := p.GetPipeline(ctx, id)
	if err != nil {
		return err
	}
	if cfg == nil {
		return notFoundf("no pipeline %q: it is not registered and has no %s", id, what)
	}
	return nil
}
