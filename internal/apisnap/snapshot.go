package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// module is a module of the repository whose exported API is snapshotted.
type module struct {
	dir, path string // its directory and module path
	skip      []string
}

// The repository's modules: the library and its examples (a module of its own).
var modules = []module{
	{dir: ".", path: "github.com/pipestate/pipestate", skip: []string{"examples"}},
	{dir: "examples", path: "github.com/pipestate/pipestate/examples"},
}

// label names a package in a snapshot: its import path without the library's
// module path ("provider/redisprovider", "examples/custombackend/sqlite"); the root is
// "pipestate".
func label(importPath string) string {
	if importPath == modules[0].path {
		return "pipestate"
	}
	return strings.TrimPrefix(importPath, modules[0].path+"/")
}

// snapshot returns the exported API of every importable package outside internal/
// of the modules under root: one line per declaration, "label.Ident: decl" (a
// method's Ident is Type.Method), sorted. Doc comments are left out, so only a
// change of a declaration changes the snapshot.
func snapshot(root string) ([]string, error) {
	var lines []string
	for _, m := range modules {
		base := filepath.Join(root, m.dir)
		err := filepath.WalkDir(base, func(dir string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(base, dir)
			rel = filepath.ToSlash(rel)
			name := d.Name()
			if dir != base && (name == "internal" || name == "testdata" || name == "vendor" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || slices.Contains(m.skip, rel)) {
				return filepath.SkipDir
			}
			importPath := m.path
			if rel != "." {
				importPath = path.Join(m.path, rel)
			}
			pkg, err := packageAPI(dir, importPath)
			if err != nil {
				return err
			}
			lines = append(lines, pkg...)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(lines)
	return lines, nil
}

// packageAPI returns the snapshot lines of the package in dir (none for a
// directory without one, or a command).
func packageAPI(dir, importPath string) ([]string, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		if _, ok := err.(*build.NoGoError); ok {
			return nil, nil
		}
		return nil, err
	}
	if bp.Name == "main" {
		return nil, nil
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, importPath)
	if err != nil {
		return nil, err
	}
	l := label(importPath)
	var out []string
	add := func(ident string, node any) {
		out = append(out, fmt.Sprintf("%s.%s: %s", l, ident, render(fset, node)))
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, spec := range v.Decl.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !n.IsExported() {
						continue
					}
					one := &ast.ValueSpec{Names: []*ast.Ident{n}, Type: vs.Type}
					if i < len(vs.Values) {
						one.Values = []ast.Expr{vs.Values[i]}
					}
					add(n.Name, &ast.GenDecl{Tok: v.Decl.Tok, Specs: []ast.Spec{one}})
				}
			}
		}
	}
	funcs := func(recv string, fs []*doc.Func) {
		for _, f := range fs {
			d := *f.Decl
			d.Doc, d.Body = nil, nil
			add(recv+f.Name, &d)
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs("", p.Funcs)
	for _, t := range p.Types {
		for _, spec := range t.Decl.Specs {
			ts := *spec.(*ast.TypeSpec)
			ts.Doc, ts.Comment = nil, nil
			add(t.Name, &ast.GenDecl{Tok: token.TYPE, Specs: []ast.Spec{&ts}})
		}
		values(t.Consts)
		values(t.Vars)
		funcs("", t.Funcs)
		funcs(t.Name+".", t.Methods)
	}
	return out, nil
}

// render prints node on one line, without comments.
func render(fset *token.FileSet, node any) string {
	var b bytes.Buffer
	if err := (&printer.Config{Mode: printer.RawFormat}).Fprint(&b, fset, node); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// ident is the identifier of a snapshot line: "provider/redisprovider.Provider.KeyPrefix".
func ident(line string) string {
	i := strings.Index(line, ": ")
	if i < 0 {
		return line
	}
	return line[:i]
}

// changed returns the identifiers whose declarations differ between old and new
// (added, removed or changed), sorted.
func changed(old, new []string) []string {
	decl := func(lines []string) map[string][]string {
		m := map[string][]string{}
		for _, l := range lines {
			m[ident(l)] = append(m[ident(l)], l)
		}
		return m
	}
	o, n := decl(old), decl(new)
	var out []string
	for id, d := range o {
		if !slices.Equal(d, n[id]) {
			out = append(out, id)
		}
	}
	for id := range n {
		if _, ok := o[id]; !ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// unreleased returns the text of the CHANGELOG's "## Unreleased" section.
func unreleased(changelog string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(changelog, "\n") {
		if strings.HasPrefix(l, "## ") {
			in = strings.HasPrefix(strings.ToLower(strings.TrimSpace(l[3:])), "unreleased")
			continue
		}
		if in {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// unnamed returns the identifiers of ids that text does not name. An identifier
// "provider/redis.Provider.KeyPrefix" is named by that string or by its short
// form "redis.Provider.KeyPrefix" (the package name the code uses), not followed
// by more of an identifier; one of a package renamed (old path to new in
// renames) also by its old path's forms.
func unnamed(ids []string, text string, renames map[string]string) []string {
	var out []string
	for _, id := range ids {
		names := []string{id}
		for old, new := range renames {
			if rest, ok := strings.CutPrefix(id, new); ok && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "/")) {
				names = append(names, old+rest)
			}
		}
		if !slices.ContainsFunc(names, func(n string) bool { return mentions(text, n) || mentions(text, shortName(n)) }) {
			out = append(out, id)
		}
	}
	return out
}

// mentions reports whether text contains name as a whole identifier.
func mentions(text, name string) bool {
	isIdent := func(c byte) bool {
		return c == '_' || c == '.' || c == '/' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		before := start == 0 || !isIdent(text[start-1])
		after := end == len(text) || !isIdent(text[end]) || text[end] == '.' && (end+1 == len(text) || !isIdent(text[end+1]))
		if before && after {
			return true
		}
		i = start + 1
	}
}

func readLines(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, nil
}

// packageRenames returns the packages that notes (a CHANGELOG section) says were
// renamed, old path to new: each "`old` is now `new`" of two package paths.
func packageRenames(notes string) map[string]string {
	m := map[string]string{}
	for _, r := range renameRE.FindAllStringSubmatch(notes, -1) {
		m[r[1]] = r[2]
	}
	return m
}

var renameRE = regexp.MustCompile("`([a-z0-9_/]+)` is now `([a-z0-9_/]+)`")

// renamePackages returns lines with the identifiers of each renamed package, and
// of the packages under it, under their new path.
func renamePackages(lines []string, renames map[string]string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l
		for old, new := range renames {
			if rest, ok := strings.CutPrefix(l, old); ok && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "/")) {
				out[i] = new + rest
				break
			}
		}
	}
	return out
}
