package main

import (
	"cmp"
	"context"
	"flag"
	"runtime/debug"
	"strings"
)

var versionCmd = &spec{
	name:    "version",
	summary: "the command's version and the commit it was built from",
	about: "Prints the version the command was built as: the one a release build stamped at link\n" +
		"time (make build, or -ldflags '-X main.version=v0.2.0'), else the module version ('go\n" +
		"install github.com/pipestate/pipestate/cmd/pipestate@v0.2.0' records v0.2.0), else (devel)\n" +
		"for a build from a source tree (a go.work workspace records no version), the VCS commit\n" +
		"and its time when the build recorded them (a build inside a git checkout does; 'go\n" +
		"install ...@version' does not: its version names the release), and the Go version.\n" +
		"--json prints one {version, module, commit, commitTime, modified, go}.",
	example: "pipestate version",
	conn:    connNone,
	define: func(in *inv, _ *flag.FlagSet) action {
		return func(_ context.Context, pos []string) error {
			if _, err := args(pos); err != nil {
				return err
			}
			read := in.buildInfo
			if read == nil {
				read = debug.ReadBuildInfo
			}
			v := buildVersion(read, in.version)
			if in.json {
				return in.emit(v)
			}
			commit := v.Commit
			switch {
			case commit == "":
				commit = "unknown (not recorded by this build)"
			case v.Modified:
				commit += " (with uncommitted changes)"
			}
			version := v.Version
			if version == develVersion {
				version += ", not a release (see pipestate version --help)"
			}
			return in.fields("version", version, "module", v.Module, "commit", commit, "time", v.CommitTime, "go", v.Go)
		}
	},
}

// versionInfo is what version prints.
type versionInfo struct {
	Version    string `json:"version"`
	Module     string `json:"module,omitempty"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commitTime,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	Go         string `json:"go,omitempty"`
}

// version is the release a build stamped at link time (make build sets it:
// -ldflags '-X main.version=v0.2.0'); empty when it was not stamped.
var version string

// develVersion is the version of a build without one, as the go command says it.
const develVersion = "(devel)"

// buildVersion is the version stamped at link time, else the one that read
// (debug.ReadBuildInfo) reports; a build with neither is develVersion.
func buildVersion(read func() (*debug.BuildInfo, bool), stamped string) versionInfo {
	bi, ok := read()
	if !ok || bi == nil {
		return versionInfo{Version: cmp.Or(stamped, develVersion)}
	}
	v := versionInfo{Version: cmp.Or(stamped, bi.Main.Version, develVersion), Module: bi.Main.Path, Go: bi.GoVersion}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		v.Go = strings.TrimSpace(v.Go + " " + goos + "/" + goarch)
	}
	return v
}
