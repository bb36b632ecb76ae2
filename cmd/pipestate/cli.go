package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate"
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

// find returns the command that args name and the arguments after the name.
func find(args []string) (*spec, []string, error) {
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
			return s, args[2:], nil
		}
	}
	if s := byName(args[0]); s != nil {
		return s, args[1:], nil
	}
	var subs []string
	for _, s := range cmds {
		if w, _, ok := strings.Cut(s.name, " "); ok && w == args[0] {
			subs = append(subs, "pipestate "+s.name)
		}
	}
	if len(subs) == 0 {
		return nil, nil, usagef("unknown command %q; 'pipestate help' lists the commands", args[0])
	}
	if d, ok := groupDefault[args[0]]; ok && (byName(d).args != "" || len(args) == 1 || strings.HasPrefix(args[1], "-")) {
		return byName(d), args[1:], nil
	}
	if len(args) == 1 {
		return nil, nil, usagef("%s needs a subcommand: %s", args[0], strings.Join(subs, ", "))
	}
	return nil, nil, usagef("unknown command %q; %s has %s", args[0]+" "+args[1], args[0], strings.Join(subs, ", "))
}

// main runs the command line args and returns the exit status.
func (c *cli) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		c.overview(c.stderr)
		return exitUsage
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if len(args) == 1 {
			c.overview(c.stdout)
			return exitOK
		}
		args = slices.Concat(args[1:], []string{"--help"})
	}
	s, rest, err := find(args)
	if err != nil {
		fmt.Fprintf(c.stderr, "pipestate: %s\n", text(err.Error()))
		return exitUsage
	}
	return c.exec(ctx, s, rest)
}

// exec parses the command's flags and runs it.
func (c *cli) exec(ctx context.Context, s *spec, args []string) int {
	fs := flag.NewFlagSet("pipestate "+s.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	in := &inv{cli: c}
	in.conn.register(fs, s.conn)
	fs.BoolVar(&in.json, "json", false, "print one JSON object per line instead of tables")
	if s.write {
		fs.BoolVar(&in.yes, "yes", false, "really write (without it the command only says what it would do)")
	}
	act := s.define(in, fs)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(c.stdout, s, fs)
		return exitOK
	}
	if err != nil {
		err = usagef("%v", err)
	} else {
		err = act(ctx, pos)
	}
	in.close()
	return c.report(s, in, err)
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

// report prints err as its kind asks and returns the exit status. The error's
// message, which may quote stored values, is shown as a text.
func (c *cli) report(s *spec, in *inv, err error) int {
	var (
		usage    *usageError
		notFound *notFoundError
	)
	if err == nil {
		return exitOK
	}
	say := func(format string, a ...any) { fmt.Fprintf(c.stderr, format+"\n", texts(a)...) }
	switch {
	case errors.As(err, &usage), errors.Is(err, pipestate.ErrInvalidArgument):
		say("pipestate %s: %s\nrun 'pipestate %s --help' for usage", s.name, err, s.name)
		return exitUsage
	case errors.As(err, &notFound):
		say("pipestate %s: %s", s.name, err)
		if in.backend != nil {
			say("(looked in %s; %s)", in.backend, in.target.hint())
		}
		return exitNotFound
	}
	say("pipestate %s: %s", s.name, err)
	var missing *ddbtypes.ResourceNotFoundException
	if errors.As(err, &missing) {
		say("the table does not exist: check --table (or " + envTable + "), or create it with 'pipestate admin create-tables'")
	}
	switch {
	case in.backend != nil:
		say("(backend %s; %s)", in.backend, in.target.hint())
	case in.target.kind != "":
		say("(backend %s; %s)", in.target, in.target.hint())
	}
	return exitError
}

// overview prints the command list.
func (c *cli) overview(w io.Writer) {
	fmt.Fprint(w, `pipestate inspects and tails the state that the pipestate library keeps in Redis,
Redis Cluster or DynamoDB: pipelines, runs, events, run logs, reruns, replays, late
arrivals, cascade markers, traits, readiness, lock holders and state-store values.

usage: pipestate COMMAND [ARGUMENTS] [FLAGS]

`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, write := range []bool{false, true} {
		if write {
			fmt.Fprintln(tw, "\nwrites (they need --yes and print what they changed):")
		} else {
			fmt.Fprintln(tw, "reads:")
		}
		for _, s := range commands() {
			if s.write == write {
				fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(s.name+" "+s.args), s.summary)
			}
		}
	}
	tw.Flush()
	fmt.Fprint(w, `
connection (every command; a flag wins over its environment variable):
  --redis ADDR             a Redis server, host:port or a redis:// URL    PIPESTATE_REDIS
  --redis-cluster A,B,C    Redis Cluster seed addresses                   PIPESTATE_REDIS_CLUSTER
  --prefix P               the provider's Redis key prefix (pipestate)    PIPESTATE_PREFIX
  --dynamodb URL --table T a DynamoDB endpoint (DynamoDB Local) and table PIPESTATE_DYNAMODB, PIPESTATE_TABLE
  --table T                alone: DynamoDB with the AWS default config    PIPESTATE_TABLE

--json prints one JSON object per line. Exit status: 0 found, 1 error, 2 usage,
3 not found. 'pipestate COMMAND --help' shows a command's flags and an example.
`)
}

// help prints the help of one command.
func (c *cli) help(w io.Writer, s *spec, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: pipestate %s [flags]\n\n%s\n\nflags:\n", strings.TrimSpace(s.name+" "+s.args), s.about)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprintf(w, "\nexample:\n")
	for line := range strings.SplitSeq(s.example, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// commands is every command, in the order of the overview.
func commands() []*spec {
	return []*spec{
		pipelinesListCmd, pipelinesShowCmd, runsCmd, runShowCmd, eventsCmd, runlogsCmd,
		rerunsCmd, replaysCmd, lateCmd, markersCmd, traitsCmd, readinessCmd, lockShowCmd, stateGetCmd,
		runFailCmd, lockReleaseCmd, createTablesCmd,
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
