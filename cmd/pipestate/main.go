package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"
)

// envNow fixes the clock (an RFC 3339 time) for reproducible output; see the
// package doc.
const envNow = "PIPESTATE_NOW"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := exitUsage
	if now, err := clock(os.Getenv(envNow)); err != nil {
		c := &cli{stderr: os.Stderr}
		c.fail(wantsJSON(os.Args[1:]), errorReport{Error: envNow + ": " + err.Error(), Code: code})
	} else {
		code = run(ctx, os.Args[1:], os.Stdout, os.Stderr, now)
	}
	stop()
	os.Exit(code)
}

// clock is time.Now, or the fixed time fixed when it is not empty.
func clock(fixed string) (func() time.Time, error) {
	if fixed == "" {
		return time.Now, nil
	}
	t, err := time.Parse(time.RFC3339Nano, fixed)
	if err != nil {
		return nil, err
	}
	return func() time.Time { return t }, nil
}

// run runs the command line args (without the program name), writing to stdout
// and stderr, with now as the clock of relative times and of the provider, and
// returns the exit status: exitOK, exitError, exitUsage or exitNotFound.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, now func() time.Time) int {
	c := &cli{stdout: stdout, stderr: stderr, now: now, getenv: os.Getenv, dial: dial, buildInfo: debug.ReadBuildInfo, version: version,
		stderrTTY: isTerminal(stderr)}
	return c.main(ctx, args)
}
