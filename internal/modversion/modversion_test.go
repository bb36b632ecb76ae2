package modversion

import (
	"runtime/debug"
	"testing"
)

func TestFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, Devel},
		{"a dependency", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v1.2.3"},
			Deps: []*debug.Module{{Path: "other", Version: "v9.9.9"}, {Path: Path, Version: "v0.1.0"}}}, true, "v0.1.0"},
		{"the main module", &debug.BuildInfo{Main: debug.Module{Path: Path, Version: "v0.1.1-0.20261201000000-abcdefabcdef"}}, true,
			"v0.1.1-0.20261201000000-abcdefabcdef"},
		{"the main module, devel", &debug.BuildInfo{Main: debug.Module{Path: Path, Version: "(devel)"}}, true, Devel},
		{"replaced by a directory", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: Path, Version: "v0.1.0", Replace: &debug.Module{Path: "../pipestate"}}}}, true, Devel},
		{"replaced by a version", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: Path, Version: "v0.1.0", Replace: &debug.Module{Path: "fork", Version: "v0.1.2"}}}}, true, "v0.1.2"},
		{"not linked", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v1.0.0"}}, true, Devel},
	} {
		if got := From(tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: From = %q, want %q", tc.name, got, tc.want)
		}
	}
	if Version() == "" {
		t.Error("Version() is empty")
	}
}
