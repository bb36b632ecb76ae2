// Package modversion says which version of the pipestate module a binary was built
// with, from the build information the go command records (runtime/debug): the
// instrumentation scope version of observe's tracers and meters and of the backends'
// meters. A release needs no step to update it: a program that requires
// github.com/pipestate/pipestate v0.1.0 reports v0.1.0.
package modversion

import (
	"runtime/debug"
	"sync"
)

// Path is the library's module path.
const Path = "github.com/pipestate/pipestate"

// Devel is the version of a build from a source tree without one, as the go
// command says it.
const Devel = "(devel)"

// Version returns the version of the pipestate module in this binary: a release
// (v0.1.0), a pseudo-version, or Devel when the build recorded none (go test in
// this repository, a replace directive pointing at a directory, a build without
// module information).
func Version() string { return version() }

var version = sync.OnceValue(func() string { return From(debug.ReadBuildInfo()) })

// From is Version for the build information bi (ok as debug.ReadBuildInfo returns it).
func From(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return Devel
	}
	v := ""
	if bi.Main.Path == Path {
		v = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path != Path {
			continue
		}
		v = d.Version
		if d.Replace != nil {
			v = d.Replace.Version // "" for a directory replacement
		}
	}
	if v == "" {
		return Devel
	}
	return v
}
