package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/provider"
)

// Exit statuses.
const (
	exitOK       = 0 // found, or done
	exitError    = 1 // the backend failed or refused
	exitUsage    = 2 // a bad command line
	exitNotFound = 3 // what was asked for does not exist
)

// usageError is a bad command line (exit 2); its message says how to fix it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// notFoundError is something asked for that does not exist (exit 3).
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func notFoundf(format string, a ...any) error { return &notFoundError{fmt.Sprintf(format, a...)} }

// cli is one run of the program: where it writes, its clock and environment, and
// how it connects (dial; tests replace it to reach an in-process backend).
type cli struct {
	stdout, stderr io.Writer
	now            func() time.Time
	getenv         func(string) string
	dial           func(ctx context.Context, t target, now func() time.Time) (backend, error)
	buildInfo      func() (*debug.BuildInfo, bool) // debug.ReadBuildInfo; tests fix it
	version        string                          // the release stamped at link time (main.version)
	stderrTTY      bool                            // stderr is a terminal: long reads show their progress there
}

// spec is one command.
type spec struct {
	name    string // "runs", "run fail"
	args    string // positional arguments in the usage line, e.g. "PIPELINE"
	summary string // one line for the command list
	about   string // the help text's paragraph
	example string // one or more example command lines
	conn    connUse
	write   bool // a write: listed apart, and needs --yes
	audited bool // a write that needs --reason and records it (--as too): see audit.go
	// define registers the command's own flags on fs and returns its action, which
	// gets the positional arguments.
	define func(in *inv, fs *flag.FlagSet) action
}

// action runs a command with its positional arguments.
type action = func(ctx context.Context, args []string) error

// groupDefault is the command a group word runs when no subcommand follows; one
// that takes an argument ("run show RUN") also runs when a word other than a
// subcommand follows ("pipestate run RUN").
var groupDefault = map[string]string{"pipelines": "pipelines list", "run": "run show", "lock": "lock show"}

// find returns the command that args name and the arguments after the name. When
// a group's default command takes the place of a word close to one of the
// group's subcommands ("pipestate run fial r-1"), maybe names that subcommand
// ('pipestate run fail'), for an error of the default command.
func find(args []string) (s *spec, rest []string, maybe string, err error) {
	cmds := commands()
	byName := func(name string) *spec {
		i := slices.IndexFunc(cmds, func(s *spec) bool { return s.name == name })
		if i < 0 {
			return nil
		}
		return cmds[i]
	}
	if len(args) > 1 {
		if s := byName(args[0] + " " + args[1]); s != nil {
			return s, args[2:], "", nil
		}
	}
	if s := byName(args[0]); s != nil {
		return s, args[1:], "", nil
	}
	var subs, subWords []string
	for _, s := range cmds {
		w, sub, ok := strings.Cut(s.name, " ")
		if ok && w == args[0] {
			subs = append(subs, "pipestate "+s.name)
			subWords = append(subWords, sub)
		}
	}
	if len(subs) == 0 {
		return nil, nil, "", usagef("unknown command %q%s; 'pipestate help' lists the commands", args[0], didYouMean(suggest(args[0], commandWords()), quoteCommand))
	}
	var near []string
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		near = suggest(args[1], subWords)
		for i, w := range near {
			near[i] = args[0] + " " + w
		}
	}
	if d, ok := groupDefault[args[0]]; ok && (byName(d).args != "" || len(args) == 1 || strings.HasPrefix(args[1], "-")) {
		return byName(d), args[1:], orList(near, quoteCommand), nil
	}
	if len(args) == 1 {
		return nil, nil, "", usagef("%s needs a subcommand: %s", args[0], strings.Join(subs, ", "))
	}
	return nil, nil, "", usagef("unknown command %q%s; %s has %s", args[0]+" "+args[1], didYouMean(near, quoteCommand), args[0], strings.Join(subs, ", "))
}

// commandWords is the first word of every command, and help, once each.
func commandWords() []string {
	var ws []string
	for _, s := range commands() {
		if w, _, _ := strings.Cut(s.name, " "); !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	return append(ws, "help")
}

// quoteCommand shows a command name as the text to type: 'pipestate runs'.
func quoteCommand(name string) string { return "'pipestate " + name + "'" }

// main runs the command line args and returns the exit status.
func (c *cli) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		c.overview(c.stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			c.overview(c.stdout)
			return exitOK
		}
		args = slices.Concat(args[1:], []string{"--help"})
	case "-version", "--version":
		args = slices.Concat([]string{"version"}, args[1:])
	}
	s, rest, maybe, err := find(args)
	if err != nil {
		c.fail(wantsJSON(args), errorReport{Error: err.Error(), Code: exitUsage})
		return exitUsage
	}
	return c.exec(ctx, s, rest, maybe)
}

// exec parses the command's flags and runs it; maybe is a suggestion for its
// errors (see find).
func (c *cli) exec(ctx context.Context, s *spec, args []string, maybe string) int {
	fs := flag.NewFlagSet("pipestate "+s.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	in := &inv{cli: c}
	in.conn.register(fs, s.conn)
	fs.BoolVar(&in.json, "json", false, "print one JSON object per line instead of tables (errors too, on stderr)")
	if s.write {
		fs.BoolVar(&in.yes, "yes", false, "really write (without it the command only says what it would do)")
	}
	if s.audited {
		in.audit.register(fs)
	}
	act := s.define(in, fs)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(c.stdout, s, fs)
		return exitOK
	}
	if err != nil {
		in.json = wantsJSON(args)
		err = flagError(fs, err)
	} else {
		var sk skipped
		err = act(provider.OnCorrupt(ctx, sk.handler(c, s, in)), pos)
		if err == nil && sk.count() > 0 {
			err = &skippedError{sk.count()}
		}
	}
	in.close()
	return c.report(s, in, err, maybe)
}

// wantsJSON reports whether args ask for --json (before a "--"), for the errors
// of a command line that did not parse.
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "json" {
			on, err := strconv.ParseBool(value)
			return !hasValue || (err == nil && on)
		}
	}
	return false
}

// skipped counts the corrupt records a command's listings skipped, and names
// each on stderr as it is skipped: a listing shows the good records and exits 1
// (see "Corrupt records" in the package doc).
type skipped struct {
	mu sync.Mutex
	n  int
}

// handler is the provider.OnCorrupt handler of command s of invocation in: a
// line of text, or with --json a skippedReport, on stderr.
func (sk *skipped) handler(c *cli, s *spec, in *inv) func(*provider.CorruptError) {
	return func(e *provider.CorruptError) {
		sk.mu.Lock()
		defer sk.mu.Unlock()
		sk.n++
		// One write, so that a progress line's redraw (one write too) never
		// lands inside the message.
		var b bytes.Buffer
		if c.stderrTTY {
			b.WriteString("\r\x1b[K") // over a progress line
		}
		if in.json {
			_ = emitTo(&b, skippedReport{Skipped: e.Error(), Kind: string(e.Kind), ID: e.ID, Key: e.Key, Command: s.name})
		} else {
			fmt.Fprintf(&b, "pipestate %s: skipped: %s\n", texts([]any{s.name, e})...)
		}
		_, _ = c.stderr.Write(b.Bytes())
	}
}

// skippedReport is a corrupt record a listing skipped as --json prints it, one
// object on stderr:
//
//	{"skipped": "provider: corrupt run state r-1 (...): ...", "kind": "run_state", "id": "r-1", "key": "...", "command": "runs"}
//
// skipped is the message; kind, id and key are the record's (see
// provider.CorruptError), id and key left out when empty.
type skippedReport struct {
	Skipped string `json:"skipped"`
	Kind    string `json:"kind"`
	ID      string `json:"id,omitempty"`
	Key     string `json:"key,omitempty"`
	Command string `json:"command"`
}

func (sk *skipped) count() int {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	return sk.n
}

// skippedError is the error of a command that printed what it read but skipped
// n corrupt records (exit 1).
type skippedError struct{ n int }

func (e *skippedError) Error() string {
	if e.n == 1 {
		return "1 corrupt record was skipped (named above); the others are shown"
	}
	return fmt.Sprintf("%d corrupt records were skipped (named above); the others are shown", e.n)
}

// parseArgs parses flags and positional arguments in any order ("--" ends the
// flags) and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// errorReport is an error as --json prints it, one object on stderr:
//
//	{"error": "...", "code": 2, "command": "runs", "backend": "...", "chosenBy": [...], "hint": "..."}
//
// error is the message and code the exit status; command (the command that
// failed), backend (what it connected to), chosenBy (the flags and variables
// that chose the backend) and hint (what to do next) are left out when unknown
// or empty.
type errorReport struct {
	Error    string   `json:"error"`
	Code     int      `json:"code"`
	Command  string   `json:"command,omitempty"`
	Backend  string   `json:"backend,omitempty"`
	ChosenBy []string `json:"chosenBy,omitempty"`
	Hint     string   `json:"hint,omitempty"`
}

// fail prints f on stderr: a JSON object (asJSON), or lines of text.
func (c *cli) fail(asJSON bool, f errorReport) {
	if asJSON {
		_ = emitTo(c.stderr, f)
		return
	}
	say := func(format string, a ...any) { fmt.Fprintf(c.stderr, format+"\n", texts(a)...) }
	if f.Command == "" {
		say("pipestate: %s", f.Error)
	} else {
		say("pipestate %s: %s", f.Command, f.Error)
	}
	if f.Hint != "" {
		say("%s", f.Hint)
	}
	if f.Backend != "" {
		looked := "backend"
		if f.Code == exitNotFound {
			looked = "looked in"
		}
		chosen := "no connection flag or variable was set"
		if len(f.ChosenBy) > 0 {
			chosen = "chosen by " + strings.Join(f.ChosenBy, ", ")
		}
		say("(%s %s; %s)", looked, f.Backend, chosen)
	}
}

// report prints err as its kind asks and returns the exit status. The error's
// message, which may quote stored values, is shown as a text. maybe is a
// suggestion (see find) for a usage or not-found error.
func (c *cli) report(s *spec, in *inv, err error, maybe string) int {
	var (
		usage    *usageError
		notFound *notFoundError
		expired  *expiredError
		missing  *ddbtypes.ResourceNotFoundException
	)
	if err == nil {
		return exitOK
	}
	f := errorReport{Error: err.Error(), Code: exitError, Command: s.name}
	switch {
	case in.backend != nil:
		f.Backend, f.ChosenBy = in.backend.String(), in.target.from
	case in.target.kind != "":
		f.Backend, f.ChosenBy = in.target.String(), in.target.from
	}
	switch {
	case errors.As(err, &usage), errors.Is(err, pipestate.ErrInvalidArgument):
		f.Code, f.Backend, f.ChosenBy = exitUsage, "", nil
		f.Hint = "run 'pipestate " + s.name + " --help' for usage"
	case errors.As(err, &expired):
		f.Code, f.Hint = exitNotFound, expired.hint
	case errors.As(err, &notFound):
		f.Code = exitNotFound
		if in.backend == nil {
			f.Backend, f.ChosenBy = "", nil
		}
	case errors.As(err, &missing):
		f.Hint = "the table does not exist: check --table (or " + envTable + "), or create it with 'pipestate admin create-tables'"
	case in.target.kind != "" && isTimeout(err):
		f.Error = fmt.Sprintf("%s did not answer within %s (%s)", in.target.endpoint(), dur(timeoutOf(in.target)), in.target.timeoutFrom)
		f.Hint = "a backend that answers slowly needs a longer --timeout"
	}
	if maybe != "" && f.Code != exitError {
		f.Hint = strings.TrimSpace("did you mean " + maybe + "? " + f.Hint)
	}
	c.fail(in.json, f)
	return f.Code
}

// overview prints the command list.
func (c *cli) overview(w io.Writer) {
	fmt.Fprint(w, `pipestate inspects and tails the state that the pipestate library keeps in Redis,
Redis Cluster or DynamoDB: pipelines, runs, events, run logs, reruns, replays, late
arrivals, cascade markers, traits, readiness, lock holders and state-store values.

usage: pipestate COMMAND [ARGUMENTS] [FLAGS]

`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, group := range []struct {
		title string
		in    func(s *spec) bool
	}{
		{"reads:", func(s *spec) bool { return !s.write && s.conn != connNone }},
		{"\nwrites (they need --yes and print what they changed):", func(s *spec) bool { return s.write }},
		{"\nother:", func(s *spec) bool { return s.conn == connNone }},
	} {
		fmt.Fprintln(tw, group.title)
		for _, s := range commands() {
			if group.in(s) {
				fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(s.name+" "+s.args), s.summary)
			}
		}
	}
	tw.Flush()
	fmt.Fprint(w, `
connection (every command but version; a flag wins over its environment variable):
  --redis ADDR             a Redis server, host:port or a redis:// URL    PIPESTATE_REDIS
  --redis-cluster A,B,C    Redis Cluster seed addresses (or a URL)        PIPESTATE_REDIS_CLUSTER
  --prefix P               the provider's Redis key prefix (pipestate)    PIPESTATE_PREFIX
  --dynamodb URL --table T a DynamoDB endpoint (DynamoDB Local) and table PIPESTATE_DYNAMODB, PIPESTATE_TABLE
  --table T                alone: DynamoDB with the AWS default config    PIPESTATE_TABLE
  --timeout D              each backend call's bound (default 10s)        PIPESTATE_TIMEOUT
  a Redis ACL user, where the URL names none: PIPESTATE_REDIS_USERNAME, PIPESTATE_REDIS_PASSWORD

Reads never write: without --yes the provider is opened read-only, so credentials
that allow reads only (see the backends' package docs) run every read.

--json prints one JSON object per line, and an error as one JSON object on stderr.
Exit status: 0 found, 1 error, 2 usage, 3 not found. 'pipestate COMMAND --help'
shows a command's flags and an example; 'pipestate version' the build.
`)
}

// help prints the help of one command.
func (c *cli) help(w io.Writer, s *spec, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: pipestate %s [flags]\n\n%s\n\nflags:\n", strings.TrimSpace(s.name+" "+s.args), s.about)
	printFlags(w, fs)
	fmt.Fprintf(w, "\nexample:\n")
	for line := range strings.SplitSeq(s.example, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// commands is every command, in the order of the overview.
func commands() []*spec {
	return []*spec{
		pipelinesListCmd, pipelinesShowCmd, runsCmd, runShowCmd, runHistoryCmd, eventsCmd, runlogsCmd,
		rerunsCmd, replaysCmd, lateCmd, markersCmd, traitsCmd, readinessCmd, lockShowCmd, locksListCmd, stateGetCmd,
		runFailCmd, lockReleaseCmd, runsReindexCmd, createTablesCmd, versionCmd,
	}
}

// args checks that a command got exactly the positional arguments names and
// returns them.
func args(got []string, names ...string) ([]string, error) {
	if len(got) < len(names) {
		return nil, usagef("missing %s", strings.Join(names[len(got):], " "))
	}
	if len(got) > len(names) {
		return nil, usagef("unexpected argument %q", got[len(names)])
	}
	return got, nil
}

// optionalArgs checks that a command got at most the positional arguments names
// and returns one value per name, "" for those not given.
func optionalArgs(got []string, names ...string) ([]string, error) {
	if len(got) > len(names) {
		return nil, usagef("unexpected argument %q", got[len(names)])
	}
	return append(got, make([]string, len(names)-len(got))...), nil
}

// isSet reports whether flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
