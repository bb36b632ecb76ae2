// Package readme_test compiles every Go snippet of the README, so that the front
// door never shows code that does not build.
package readme_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// given declares what the snippets use without defining it: clients, a context,
// a run, a cursor, a message, the time, and the third-party backend of "Writing
// your own backend".
const given = `package readme

import (
	"context"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

var (
	ctx       context.Context
	err       error
	client    goredis.UniversalClient
	ddbClient *ddb.Client
	run, next types.RunState
	cursor    string
	msg       struct{ ID string }
	now       time.Time
	p         provider.Provider
	rp        *redisprovider.Provider
)

// mybackend stands for a third party's backend package.
var mybackend struct {
	New func(db any) (provider.Provider, error)
}

func dbFor(*testing.T) any                   { return nil }
func clockFor(*testing.T) *fakeclock.Clock    { return nil }
func evaluate(pipelineID, date string)       {}
`

// imports are what a snippet may use; unused ones are not errors here.
const imports = `import (
	"context"
	"testing"
	"time"

	"github.com/pipestate/pipestate/breaker"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/observe"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/providertest"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/types"
)
`

// tolerated are compiler complaints that a snippet, shown out of context, may
// cause: names it declares for the reader and does not use again.
var tolerated = regexp.MustCompile(`declared and not used|imported (as \w+ )?and not used`)

func TestSnippetsCompile(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go snippets")
	}
	dir := t.TempDir()
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	replace := map[string]string{}
	add := func(name, src string) {
		tmp := filepath.Join(dir, name)
		if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		replace[filepath.Join(here, name)] = tmp
	}
	add("given.go", given)
	for i, b := range blocks {
		body := b[1]
		if strings.HasPrefix(body, "package main\n") {
			continue // a complete program: TestProgramsBuild
		}
		// The state stores of every backend share names; the README says which
		// backend a line is about, and the snippet uses the state/redisstate one.
		body = strings.NewReplacer("redisprovider.NewInt64SumStore", "redisstate.NewInt64SumStore",
			"redisprovider.NewBytesStore", "redisstate.NewBytesStore").Replace(body)
		src := fmt.Sprintf("package readme\n\n%s\n", imports)
		if strings.HasPrefix(body, "func ") {
			src += body
		} else {
			src += fmt.Sprintf("func snippet%d() {\n%s}\n", i, body)
		}
		add(fmt.Sprintf("snippet%d.go", i), src)
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("go", "build", "-gcflags=-e", "-overlay", ov, ".").CombinedOutput()
	var bad []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, ".go:") && !tolerated.MatchString(line) {
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("README snippets do not compile:\n%s\n(snippets are numbered in README order from 0; full output:\n%s)", strings.Join(bad, "\n"), out)
	}
}

// TestProgramsBuild builds every complete program of the README (a Go block
// that starts with "package main") as it is, so a copy and paste builds: at
// least one on provider/redisprovider and one on provider/ddbprovider.
func TestProgramsBuild(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	backends := map[string]bool{}
	for i, b := range regexp.MustCompile("(?s)```go\n(package main\n.*?)```").FindAllStringSubmatch(string(readme), -1) {
		for _, backend := range []string{"provider/redisprovider", "provider/ddbprovider"} {
			if strings.Contains(b[1], `"github.com/pipestate/pipestate/`+backend+`"`) {
				backends[backend] = true
			}
		}
		dir := t.TempDir()
		src := filepath.Join(dir, "main.go")
		if err := os.WriteFile(src, []byte(b[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		pkg := filepath.Join(here, fmt.Sprintf("program%d", i))
		overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(pkg, "main.go"): src}})
		if err != nil {
			t.Fatal(err)
		}
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("go", "build", "-overlay", ov, "-o", filepath.Join(dir, "program"), "./"+filepath.Base(pkg)).CombinedOutput(); err != nil {
			t.Errorf("README's program %d does not build: %v\n%s", i, err, out)
		}
	}
	if !backends["provider/redisprovider"] || !backends["provider/ddbprovider"] {
		t.Errorf("README's complete programs use %v, want provider/redisprovider and provider/ddbprovider", backends)
	}
}
