package redisx

import (
	"context"
	"strings"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// Script is a Lua script: its name (for the reload hook), its source and SHA1, and
// whether it only reads. The heads of its command lines are boxed once, so that a
// call allocates no interface for them. Scripts are package-level values, made once
// with NewScript.
type Script struct {
	name string
	src  string
	sha  string
	ro   bool
	// boxed: sha and src as EVALSHA's and EVAL's arguments
	shaArg, srcArg any
}

// NewScript returns the script of src named name. A read script (ro) must never
// write: it runs with EVALSHA_RO (EVAL_RO after NOSCRIPT).
func NewScript(name, src string, ro bool) *Script {
	sha := goredis.NewScript(src).Hash()
	return &Script{name: name, src: src, sha: sha, ro: ro, shaArg: sha, srcArg: src}
}

// Name returns s's name.
func (s *Script) Name() string { return s.name }

// Source returns s's source, for SCRIPT LOAD.
func (s *Script) Source() string { return s.src }

// Hash returns the SHA1 of s's source, EVALSHA's argument.
func (s *Script) Hash() string { return s.sha }

// ReadOnly reports whether s only reads.
func (s *Script) ReadOnly() bool { return s.ro }

// Runner runs scripts on one client. The zero value is not usable: set Client.
// A Runner must not be copied after first use.
type Runner struct {
	Client goredis.UniversalClient
	// Reloaded, when set, is called for each script sent again with EVAL after
	// NOSCRIPT (for the signal's metric and log).
	Reloaded func(ctx context.Context, script string)
	// noRO is set once the server answered that it has no EVALSHA_RO.
	noRO atomic.Bool
}

// Line starts a command line of s with nkeys keys and room for nargs arguments
// after them: EVALSHA (EVALSHA_RO for a read script), the SHA1, nkeys. The caller
// appends the keys, then the arguments, and hands it to RunLine. go-redis takes
// the line as it is: no copy, no boxing again.
func (r *Runner) Line(s *Script, nkeys, nargs int) []any {
	a := make([]any, 3, 3+nkeys+nargs)
	a[0], a[1], a[2] = r.name(s, false), s.shaArg, nkeys
	return a
}

// Cmd returns the command of s on keys and args as first sent (EVALSHA, or
// EVALSHA_RO for a read script), unsent: to put in a pipeline, and to hand with
// its answer to Retry.
func (r *Runner) Cmd(ctx context.Context, s *Script, keys []string, args []any) *goredis.Cmd {
	return r.cmd(ctx, s, false, keys, args)
}

// cmd returns the EVALSHA command of s on keys and args, or its EVAL command when
// eval is true, with every argument in one slice (go-redis's Script methods copy
// keys and args into a slice of their own).
func (r *Runner) cmd(ctx context.Context, s *Script, eval bool, keys []string, args []any) *goredis.Cmd {
	a := make([]any, 3+len(keys)+len(args))
	a[0], a[2] = r.name(s, eval), len(keys)
	if eval {
		a[1] = s.srcArg
	} else {
		a[1] = s.shaArg
	}
	for i, k := range keys {
		a[3+i] = k
	}
	copy(a[3+len(keys):], args)
	return newCmd(ctx, a, len(keys) > 0)
}

// name is the command that sends s: EVALSHA or EVAL (eval), with _RO for a read
// script unless the server has no _RO commands.
func (r *Runner) name(s *Script, eval bool) string {
	ro := s.ro && !r.noRO.Load()
	switch {
	case eval && ro:
		return "eval_ro"
	case eval:
		return "eval"
	case ro:
		return "evalsha_ro"
	}
	return "evalsha"
}

// newCmd returns the command of line, routed on a cluster by its first key.
func newCmd(ctx context.Context, line []any, keyed bool) *goredis.Cmd {
	c := goredis.NewCmd(ctx, line...)
	if keyed {
		c.SetFirstKeyPos(3)
	}
	return c
}

// Run runs s on keys and args (see the package doc): EVALSHA, then EVAL after
// NOSCRIPT; the _RO commands for a read script, the plain ones from the server's
// first "unknown command" answer on.
func (r *Runner) Run(ctx context.Context, s *Script, keys []string, args ...any) *goredis.Cmd {
	c := r.Cmd(ctx, s, keys, args)
	_ = r.Client.Process(ctx, c)
	return r.Retry(ctx, s, c, keys, args)
}

// RunLine runs the command line line of s (from Line, keys and arguments
// appended) as Run does. It may reuse line for a second send.
func (r *Runner) RunLine(ctx context.Context, s *Script, line []any) *goredis.Cmd {
	keyed := line[2].(int) > 0
	c := newCmd(ctx, line, keyed)
	_ = r.Client.Process(ctx, c)
	if s.ro && IsUnknownCommand(c.Err()) {
		r.noRO.Store(true)
		line[0] = r.name(s, false)
		c = newCmd(ctx, line, keyed)
		_ = r.Client.Process(ctx, c)
	}
	if !IsNoScript(c.Err()) {
		return c
	}
	r.reloaded(ctx, s)
	line[0], line[1] = r.name(s, true), s.srcArg
	c = newCmd(ctx, line, keyed)
	_ = r.Client.Process(ctx, c)
	return c
}

// Retry finishes the first send c of s on keys and args (from Cmd, already
// answered, for instance in a pipeline): when the server answered "unknown
// command" to a read script, it sends it again with EVALSHA; when it answered
// NOSCRIPT, with EVAL (EVAL_RO), recording the reload. Otherwise it returns c.
func (r *Runner) Retry(ctx context.Context, s *Script, c *goredis.Cmd, keys []string, args []any) *goredis.Cmd {
	if s.ro && IsUnknownCommand(c.Err()) {
		r.noRO.Store(true)
		c = r.Cmd(ctx, s, keys, args)
		_ = r.Client.Process(ctx, c)
	}
	if !IsNoScript(c.Err()) {
		return c
	}
	r.reloaded(ctx, s)
	c = r.cmd(ctx, s, true, keys, args)
	_ = r.Client.Process(ctx, c)
	return c
}

// Call is one script invocation of RunMany.
type Call struct {
	Script *Script
	Keys   []string
	Args   []any
}

// RunMany runs calls in one pipeline (one round trip per node; a pipeline even
// for one call), then sends the calls the server answered NOSCRIPT (or "unknown
// command", for read scripts) again in a second pipeline: one more round trip. cmds[i] is the answer of
// calls[i]. The calls must not depend on each other's order: on a cluster they
// run on several nodes at once.
func (r *Runner) RunMany(ctx context.Context, calls []Call) []*goredis.Cmd {
	cmds := make([]*goredis.Cmd, len(calls))
	_, _ = r.Client.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = r.Cmd(ctx, c.Script, c.Keys, c.Args)
			_ = pipe.Process(ctx, cmds[i])
		}
		return nil
	})
	var again []int
	for i, c := range calls {
		if err := cmds[i].Err(); IsNoScript(err) || c.Script.ro && IsUnknownCommand(err) {
			if IsUnknownCommand(err) {
				r.noRO.Store(true)
			}
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return cmds
	}
	_, _ = r.Client.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for _, i := range again {
			c := calls[i]
			eval := IsNoScript(cmds[i].Err())
			if eval {
				r.reloaded(ctx, c.Script)
			}
			cmds[i] = r.cmd(ctx, c.Script, eval, c.Keys, c.Args)
			_ = pipe.Process(ctx, cmds[i])
		}
		return nil
	})
	// A read script the server refused as unknown may answer NOSCRIPT now.
	for _, i := range again {
		if c := calls[i]; IsNoScript(cmds[i].Err()) {
			cmds[i] = r.Retry(ctx, c.Script, cmds[i], c.Keys, c.Args)
		}
	}
	return cmds
}

func (r *Runner) reloaded(ctx context.Context, s *Script) {
	if r.Reloaded != nil {
		r.Reloaded(ctx, s.name)
	}
}

// IsNoScript reports whether err is Redis's NOSCRIPT error.
func IsNoScript(err error) bool { return err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") }

// IsUnknownCommand reports whether err is Redis's answer to a command it does not
// have (EVALSHA_RO before Redis 7.0).
func IsUnknownCommand(err error) bool {
	return err != nil && (goredis.HasErrorPrefix(err, "unknown command") || // HasErrorPrefix drops "ERR "
		// miniredis runs EVAL_RO but counts XINFO as a write, which Redis does not.
		strings.Contains(err.Error(), "Write commands are not allowed in read-only scripts"))
}
