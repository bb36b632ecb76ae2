package observe

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/types"
)

// TestProviderKeepsCapabilities wraps a provider of every combination of optional
// interfaces and checks that each assertion succeeds on the decorator exactly when
// it succeeds on the original.
func TestProviderKeepsCapabilities(t *testing.T) {
	mem, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	full := everything{mem}
	for mask := range uint(1) << len(restrictProviderCapabilities) {
		inner := withRestrictProvider(mask, full)
		wrapped, err := Provider(inner)
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range restrictProviderCapabilities {
			want := mask&(1<<i) != 0
			var inOK, outOK bool
			switch name {
			case "provider.Leaser":
				_, inOK = inner.(provider.Leaser)
				_, outOK = wrapped.(provider.Leaser)
			case "provider.CascadeReader":
				_, inOK = inner.(provider.CascadeReader)
				_, outOK = wrapped.(provider.CascadeReader)
			case "provider.RunCreator":
				_, inOK = inner.(provider.RunCreator)
				_, outOK = wrapped.(provider.RunCreator)
			case "provider.EventFollower":
				_, inOK = inner.(provider.EventFollower)
				_, outOK = wrapped.(provider.EventFollower)
			case "provider.MarkerWatcher":
				_, inOK = inner.(provider.MarkerWatcher)
				_, outOK = wrapped.(provider.MarkerWatcher)
			case "provider.LockInspector":
				_, inOK = inner.(provider.LockInspector)
				_, outOK = wrapped.(provider.LockInspector)
			case "provider.LockLister":
				_, inOK = inner.(provider.LockLister)
				_, outOK = wrapped.(provider.LockLister)
			case "provider.ActiveRunLister":
				_, inOK = inner.(provider.ActiveRunLister)
				_, outOK = wrapped.(provider.ActiveRunLister)
			case "provider.ActiveRunReindexer":
				_, inOK = inner.(provider.ActiveRunReindexer)
				_, outOK = wrapped.(provider.ActiveRunReindexer)
			default:
				t.Fatalf("no assertion for capability %s: add it here", name)
			}
			if inOK != want || outOK != want {
				t.Errorf("mask %b, %s: original %v, decorator %v, want %v", mask, name, inOK, outOK, want)
			}
		}
	}
}

// everything implements every optional provider interface (the ones memory lacks
// with stubs), the source of the values of each combination.
type everything struct{ *memprovider.Provider }

func (everything) CreateRunState(context.Context, types.RunState) (bool, error) { return false, nil }
func (everything) FollowEvents(context.Context, string, string) iter.Seq2[types.EventRecord, error] {
	return func(func(types.EventRecord, error) bool) {}
}
func (everything) WatchCascadeMarkers(context.Context, string) iter.Seq2[types.CascadeMarkerRecord, error] {
	return func(func(types.CascadeMarkerRecord, error) bool) {}
}

// revisioned is a store with every optional interface of package state.
type revisioned struct{ *memstate.Store[int64] }

func (revisioned) GetRevisions(context.Context, []state.Key) ([]state.Revision[int64], error) {
	return nil, nil
}

func TestStoreKeepsCapabilities(t *testing.T) {
	mem, err := memstate.New[int64](monoid.Sum[int64]{})
	if err != nil {
		t.Fatal(err)
	}
	full := revisioned{mem}
	for mask := range uint(1) << len(restrictStoreCapabilities) {
		inner := withRestrictStore[int64](mask, full)
		wrapped, err := Store(inner)
		if err != nil {
			t.Fatal(err)
		}
		_, inOK := inner.(state.OnceStore[int64])
		_, outOK := wrapped.(state.OnceStore[int64])
		if want := mask&1 != 0; inOK != want || outOK != want {
			t.Errorf("mask %b: OnceStore on original %v, decorator %v, want %v", mask, inOK, outOK, want)
		}
		_, inOK = inner.(state.BatchStore[int64])
		_, outOK = wrapped.(state.BatchStore[int64])
		if want := mask&2 != 0; inOK != want || outOK != want {
			t.Errorf("mask %b: BatchStore on original %v, decorator %v, want %v", mask, inOK, outOK, want)
		}
		_, inOK = inner.(state.RevisionStore[int64])
		_, outOK = wrapped.(state.RevisionStore[int64])
		if want := mask&4 != 0; inOK != want || outOK != want {
			t.Errorf("mask %b: RevisionStore on original %v, decorator %v, want %v", mask, inOK, outOK, want)
		}
	}
}

// TestCapabilityListsAreComplete fails when a package gains an optional interface
// (its doc says "is an optional interface") that the decorators do not keep: run
// go generate ./observe after adding it to the go:generate lines.
func TestCapabilityListsAreComplete(t *testing.T) {
	for _, tc := range []struct {
		dir, pkg string
		have     []string
	}{
		{"../provider", "provider", restrictProviderCapabilities},
		// onceMethods[V], batchMethods[V] and revisionMethods[V] are OnceStore's,
		// BatchStore's and RevisionStore's extra methods.
		{"../state", "state", []string{"state.BatchStore", "state.OnceStore", "state.RevisionStore"}},
	} {
		want := optionalInterfaces(t, tc.dir, tc.pkg)
		if !slices.Equal(restrictStoreCapabilities, []string{"onceMethods[V]", "batchMethods[V]", "revisionMethods[V]"}) {
			t.Fatalf("restrictStoreCapabilities = %v: update this test's list for state", restrictStoreCapabilities)
		}
		if !slices.Equal(want, sorted(tc.have)) {
			t.Errorf("%s declares optional interfaces %v; the decorator keeps %v", tc.pkg, want, tc.have)
		}
	}
}

func optionalInterfaces(t *testing.T, dir, pkg string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				doc := g.Doc
				if ts.Doc != nil {
					doc = ts.Doc
				}
				if _, isIface := ts.Type.(*ast.InterfaceType); isIface && doc != nil &&
					strings.Contains(doc.Text(), ts.Name.Name+" is an optional interface") {
					out = append(out, pkg+"."+ts.Name.Name)
				}
			}
		}
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestGeneratedCodeIsCurrent reruns capwrap with the arguments each generated file
// records and compares the output.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	for _, name := range []string{"restrict_provider.go", "restrict_store.go"} {
		have, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := bytes.Cut(have, []byte("\n"))
		args, ok := strings.CutPrefix(string(first), "// Code generated by capwrap ")
		if !ok {
			t.Fatalf("%s: no capwrap header", name)
		}
		args = strings.TrimSuffix(args, "; DO NOT EDIT.")
		fields := splitArgs(args)
		out := filepath.Join(t.TempDir(), name)
		for i, f := range fields {
			if f == "-out" {
				fields[i+1] = out
			}
		}
		cmd := exec.Command("go", append([]string{"run", "../internal/capwrap"}, fields...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("capwrap: %v\n%s", err, b)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		got = bytes.Replace(got, []byte(out), []byte(name), 1)
		if !bytes.Equal(got, have) {
			t.Errorf("%s is stale: run go generate ./observe", name)
		}
	}
}

// splitArgs splits a command line at spaces, keeping single-quoted words whole.
func splitArgs(s string) []string {
	var out []string
	for s != "" {
		s = strings.TrimLeft(s, " ")
		if strings.HasPrefix(s, "'") {
			w, rest, _ := strings.Cut(s[1:], "'")
			out, s = append(out, w), rest
			continue
		}
		w, rest, _ := strings.Cut(s, " ")
		out, s = append(out, w), rest
	}
	return out
}
