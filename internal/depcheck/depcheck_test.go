package depcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/pipestate/pipestate"

// ban is a kind of dependency some packages must not have.
type ban struct {
	what  string
	match func(importPath string) bool
}

func contains(s string) func(string) bool {
	return func(p string) bool { return strings.Contains(p, s) }
}

func under(prefixes ...string) func(string) bool {
	return func(p string) bool {
		return slices.ContainsFunc(prefixes, func(pre string) bool { return p == pre || strings.HasPrefix(p, pre+"/") })
	}
}

var (
	banSQLite = ban{"SQLite", contains("sqlite")}
	banYAML   = ban{"YAML", contains("yaml")}
	banDocker = ban{"Docker or testcontainers", under("github.com/docker", "github.com/moby", "github.com/containerd",
		"github.com/testcontainers")}
	banAWS = ban{"the AWS SDK", under("github.com/aws")}
	// banLambda: the Lambda runtime is the examples' (examples/streamrouter);
	// package ddbstream decodes a Lambda's records from their JSON instead.
	banLambda = ban{"the AWS Lambda runtime", under("github.com/aws/aws-lambda-go")}
	banRedis  = ban{"a Redis client", under("github.com/redis", "github.com/alicebob/miniredis")}
	// banTestkit: the test kits (internal/testkit/...: lincheck, faults, testenv,
	// fakeclock, benchpair, steadyload, memorytest) sit above what they test:
	// only tests and other test kits import them.
	banTestkit  = ban{"a test kit", under(module + "/internal/testkit")}
	banBackends = ban{"a built-in backend", under(module+"/provider/memprovider", module+"/provider/redisprovider",
		module+"/provider/ddbprovider", module+"/state/memstate", module+"/state/redisstate", module+"/state/ddbstate")}
)

// rules says which packages may not depend on what. "all" is every package of the
// library module outside internal/.
var rules = []struct {
	pkgs []string
	bans []ban
}{
	{[]string{"all"}, []ban{banSQLite, banYAML, banDocker, banTestkit, banLambda}},
	{[]string{"provider/memprovider", "provider/redisprovider", "state/memstate", "state/redisstate"}, []ban{banAWS}},
	// The backend-neutral packages: the contract (types, fence, provider, state, the
	// root sentinels), the monoids and the conformance suites import no client library and
	// no backend, so a third-party backend pulls in neither Redis nor the AWS SDK.
	{[]string{"", "types", "fence", "provider", "state", "monoid/...", "providertest", "state/statetest"},
		[]ban{banAWS, banRedis, banBackends}},
}

func TestLibraryDependencies(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go tool: %v", err)
	}
	for _, r := range rules {
		patterns := make([]string, len(r.pkgs))
		for i, p := range r.pkgs {
			patterns[i] = strings.TrimSuffix(module+"/"+p, "/")
		}
		if r.pkgs[0] == "all" {
			patterns = []string{module + "/..."}
		}
		pkgs := list(t, patterns)
		if len(pkgs) == 0 {
			t.Fatalf("go list %v lists no package", patterns)
		}
		for _, p := range pkgs {
			if r.pkgs[0] == "all" && strings.HasPrefix(p.ImportPath+"/", module+"/internal/testkit/") {
				continue // the test kits may use Docker, and import each other
			}
			for _, b := range r.bans {
				if bad := slices.DeleteFunc(slices.Clone(p.Deps), func(d string) bool { return !b.match(d) }); len(bad) > 0 {
					t.Errorf("%s depends on %s: %s", p.ImportPath, b.what, brief(bad))
				}
			}
		}
	}
}

// brief names the first three of paths and counts the rest.
func brief(paths []string) string {
	if len(paths) <= 3 {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:3], ", "), len(paths)-3)
}

// TestBansMatch: each ban matches what it is meant to, and not the library.
func TestBansMatch(t *testing.T) {
	for _, c := range []struct {
		b    ban
		hits []string
	}{
		{banSQLite, []string{"modernc.org/sqlite", "modernc.org/sqlite/lib", "github.com/mattn/go-sqlite3"}},
		{banYAML, []string{"gopkg.in/yaml.v3", "go.yaml.in/yaml/v3", "sigs.k8s.io/yaml"}},
		{banDocker, []string{"github.com/docker/go-connections/nat", "github.com/moby/moby/client", "github.com/testcontainers/testcontainers-go"}},
		{banAWS, []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb", "github.com/aws/smithy-go"}},
		{banRedis, []string{"github.com/redis/go-redis/v9", "github.com/alicebob/miniredis/v2"}},
		{banBackends, []string{module + "/provider/redisprovider", module + "/state/ddbstate"}},
		{banTestkit, []string{module + "/internal/testkit/testenv", module + "/internal/testkit/memorytest"}},
		{banLambda, []string{"github.com/aws/aws-lambda-go/events", "github.com/aws/aws-lambda-go/lambda"}},
	} {
		for _, h := range c.hits {
			if !c.b.match(h) {
				t.Errorf("ban of %s misses %s", c.b.what, h)
			}
		}
		for _, ok := range []string{module, module + "/provider", module + "/providertest", "context"} {
			if c.b.match(ok) {
				t.Errorf("ban of %s matches %s", c.b.what, ok)
			}
		}
	}
}

// pkg is what go list -json says of a package.
type pkg struct {
	ImportPath string
	Deps       []string
	Error      *struct{ Err string }
	DepsErrors []struct{ Err string }
}

// list runs go list on patterns in the library module alone (GOWORK=off, so the
// examples' requirements do not count) and returns the packages with their
// transitive dependencies. A package go list cannot load fails the test: an
// import of a module the library does not require is also a dependency it must
// not have.
func list(t *testing.T, patterns []string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Deps,Error,DepsErrors"}, patterns...)...)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", patterns, err, stderr.String())
	}
	var pkgs []pkg
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list %v: decode: %v", patterns, err)
		}
		if p.Error != nil {
			t.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		for _, e := range p.DepsErrors {
			t.Errorf("go list: %s: dependency: %s", p.ImportPath, e.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
