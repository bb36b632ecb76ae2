package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/types"
)

// TestVersion: version prints what the build recorded, with (devel) for a build
// without a version and "unknown" for a commit it did not record.
func TestVersion(t *testing.T) {
	t.Parallel()
	main := debug.Module{Path: "github.com/pipestate/pipestate"}
	settings := []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"}}
	vcs := append(settings, debug.BuildSetting{Key: "vcs", Value: "git"},
		debug.BuildSetting{Key: "vcs.revision", Value: "80821e4c8f1b2a3d4e5f60718293a4b5c6d7e8f9"},
		debug.BuildSetting{Key: "vcs.time", Value: "2026-11-26T09:30:00Z"})
	release := main
	release.Version = "v0.1.0"
	for _, tc := range []struct {
		name    string
		info    *debug.BuildInfo // nil: no build information
		args    string
		stamped string // main.version
	}{
		{"version-devel", &debug.BuildInfo{GoVersion: "go1.26.0", Main: main, Settings: settings}, "version", ""},
		{"version-vcs", &debug.BuildInfo{GoVersion: "go1.26.0", Main: main, Settings: vcs}, "version", ""},
		{"version-modified", &debug.BuildInfo{GoVersion: "go1.26.0", Main: main,
			Settings: append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "version", ""},
		{"version-release", &debug.BuildInfo{GoVersion: "go1.26.0", Main: release, Settings: settings}, "version", ""},
		{"version-release-json", &debug.BuildInfo{GoVersion: "go1.26.0", Main: release, Settings: settings}, "version --json", ""},
		{"version-vcs-json", &debug.BuildInfo{GoVersion: "go1.26.0", Main: main, Settings: vcs}, "--version --json", ""},
		{"version-none", nil, "version", ""},
		{"usage-version-arg", nil, "version v2", ""},
		// A release build from a source tree (go.work: the module version is
		// (devel)) stamped by make build.
		{"version-stamped", &debug.BuildInfo{GoVersion: "go1.26.0", Main: main, Settings: vcs}, "version", "v0.2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r result
			c := &cli{now: nil, getenv: getenv(nil), buildInfo: func() (*debug.BuildInfo, bool) { return tc.info, tc.info != nil },
				version: tc.stamped}
			var stdout, stderr strings.Builder
			c.stdout, c.stderr = &stdout, &stderr
			r.code = c.main(context.Background(), words(tc.args))
			r.stdout, r.stderr = stdout.String(), stderr.String()
			h := &harness{name: "memory", lease: types.Lease{Token: "\x00"}} // no token to hide
			compareGolden(t, h, tc.name, transcript(t, goldenCase{tc.name, words(tc.args)}, r, h, nil))
		})
	}
}

// TestVersionBinary: the built command reports its module, and the commit when
// it was built inside a git checkout.
func TestVersionBinary(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "version", "--json")
	v := decodeLines[versionInfo](t, r.stdout)
	if r.code != exitOK || len(v) != 1 || v[0].Module != "github.com/pipestate/pipestate" || v[0].Version == "" || !strings.HasPrefix(v[0].Go, "go1.") {
		t.Errorf("exit %d, %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestVersionStamped: a build stamped at link time, as make build stamps a
// release, prints that version, not (devel).
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "pipestate")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v0.2.0-test", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	v := decodeLines[versionInfo](t, string(out))
	if err != nil || len(v) != 1 || v[0].Version != "v0.2.0-test" {
		t.Errorf("version --json of a stamped build: %q, %v; want version v0.2.0-test", out, err)
	}
}
