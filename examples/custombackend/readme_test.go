package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/examples/custombackend/sqlite"
	"github.com/pipestate/pipestate/provider"
)

// optional is every interface of package provider beyond Provider and its
// parts, as the type a backend may implement.
var optional = map[string]reflect.Type{
	"Leaser":             reflect.TypeFor[provider.Leaser](),
	"CascadeReader":      reflect.TypeFor[provider.CascadeReader](),
	"RunCreator":         reflect.TypeFor[provider.RunCreator](),
	"EventFollower":      reflect.TypeFor[provider.EventFollower](),
	"MarkerWatcher":      reflect.TypeFor[provider.MarkerWatcher](),
	"LockInspector":      reflect.TypeFor[provider.LockInspector](),
	"LockLister":         reflect.TypeFor[provider.LockLister](),
	"CorruptReporter":    reflect.TypeFor[provider.CorruptReporter](),
	"ActiveRunLister":    reflect.TypeFor[provider.ActiveRunLister](),
	"ActiveRunReindexer": reflect.TypeFor[provider.ActiveRunReindexer](),
}

// TestReadmeCurrent keeps README.md current: it names every file of the sqlite
// package (tests aside) and every optional provider interface that
// sqlite.Provider implements, and optional lists every interface package
// provider has beyond Provider's parts.
func TestReadmeCurrent(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	files, err := filepath.Glob("sqlite/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if !strings.Contains(readme, "`"+f+"`") {
			t.Errorf("README.md does not name %s (as `%s` in its table of files)", f, f)
		}
	}
	impl := reflect.TypeFor[*sqlite.Provider]()
	for name, iface := range optional {
		if impl.Implements(iface) && !strings.Contains(readme, "provider."+name) {
			t.Errorf("sqlite.Provider implements provider.%s and README.md does not name it", name)
		}
	}
	for _, name := range providerInterfaces(t) {
		if _, ok := optional[name]; !ok {
			t.Errorf("package provider has interface %s: add it to optional in readme_test.go (and to README.md if sqlite implements it)", name)
		}
	}
}

// providerInterfaces is the exported interfaces of package provider's source
// other than Provider and those Provider embeds.
func providerInterfaces(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/pipestate/pipestate/provider").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names, base []string
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				it, ok := ts.Type.(*ast.InterfaceType)
				if !ok || !ts.Name.IsExported() {
					continue
				}
				names = append(names, ts.Name.Name)
				if ts.Name.Name == "Provider" {
					base = append(base, "Provider")
					for _, m := range it.Methods.List {
						if id, ok := m.Type.(*ast.Ident); ok && len(m.Names) == 0 {
							base = append(base, id.Name)
						}
					}
				}
			}
		}
	}
	if len(base) < 2 {
		t.Fatalf("found no interface Provider with embedded parts in %s", dir)
	}
	return slices.DeleteFunc(names, func(n string) bool { return slices.Contains(base, n) })
}
