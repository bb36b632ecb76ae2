package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: with a fake old and new API and CHANGELOG, the check fails while an
// identifier that changed, appeared or disappeared is not named in the Unreleased
// section (a mention under an older release does not count), and passes once each
// is named, in the full or the short form.
func TestCheck(t *testing.T) {
	old := []string{
		"provider/redis.Provider.KeyPrefix: func (p *Provider) KeyPrefix() string",
		"provider/redis.WithOwner: func WithOwner(owner string) Option",
		"state.Key: type Key struct { Entity string }",
	}
	now := []string{
		"provider/redis.Provider.KeyPrefix: func (p *Provider) KeyPrefix() string",
		"state.Key: type Key struct { Entity string; Window int }",             // changed
		"observe.WithServer: func WithServer(address string, port int) Option", // added
		// provider/redis.WithOwner removed
	}
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	current, release := write("current.txt", append([]string{"# header"}, now...)...), write("v0.1.0.txt", old...)

	for _, tc := range []struct {
		name      string
		changelog string
		missing   []string // identifiers the failure must list; none: passes
	}{
		{"none named", "# Changelog\n\n## Unreleased\n\n### Added\n\n## v0.1.0\n\n- `state.Key` and `observe.WithServer` and `redis.WithOwner`\n",
			[]string{"observe.WithServer", "provider/redis.WithOwner", "state.Key"}},
		{"one unnamed", "## Unreleased\n\n### Added\n- `observe.WithServer(address, port)`.\n### Changes you must make\n- `state.Key` has a Window.\n",
			[]string{"provider/redis.WithOwner"}},
		{"a longer identifier is not a mention", "## Unreleased\n- observe.WithServerX, state.KeyRange, redis.WithOwnerName\n",
			[]string{"observe.WithServer", "provider/redis.WithOwner", "state.Key"}},
		{"all named", "## Unreleased\n- `observe.WithServer`\n- state.Key.\n- provider/redis.WithOwner is gone\n## v0.1.0\n", nil},
		{"short form", "## Unreleased\n- `observe.WithServer`, `state.Key`, `redis.WithOwner`\n", nil},
	} {
		err := check(now, current, release, write("CHANGELOG.md", tc.changelog))
		if len(tc.missing) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: passed, want a failure naming %v", tc.name, tc.missing)
			continue
		}
		for _, id := range tc.missing {
			if !strings.Contains(err.Error(), id+":") {
				t.Errorf("%s: the failure does not list %s:\n%v", tc.name, id, err)
			}
		}
		if !strings.Contains(err.Error(), "Unreleased") {
			t.Errorf("%s: the failure does not say where to name them: %v", tc.name, err)
		}
	}

	// The working tree's API differs from the committed snapshot: fail, whatever
	// the CHANGELOG says, and say to run make api.
	err := check(append(now, "state.New: func New()"), current, release, write("CHANGELOG.md", "## Unreleased\n- state.New\n"))
	if err == nil || !strings.Contains(err.Error(), "make api") || !strings.Contains(err.Error(), "+ state.New: func New()") {
		t.Errorf("a stale snapshot: %v, want a failure saying to run make api", err)
	}
}

// TestCheckRename: a package the Unreleased section says was renamed is compared
// under its new path, so a declaration that only moved needs no other mention,
// and one that moved and changed still does (by its old or new name).
func TestCheckRename(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	release := write("v0.1.0.txt",
		"provider/redis.New: func New() *Provider",
		"provider/redis.WithOwner: func WithOwner(owner string) Option",
		"provider/redis/sub.F: func F()")
	now := []string{
		"provider/redisprovider.New: func New() *Provider",
		"provider/redisprovider.WithOwner: func WithOwner(owner int) Option", // changed
		"provider/redisprovider/sub.F: func F()",
	}
	current := write("current.txt", now...)
	renamed := "## Unreleased\n- `provider/redis` is now `provider/redisprovider`\n"
	err := check(now, current, release, write("CHANGELOG.md", renamed))
	if err == nil || !strings.Contains(err.Error(), "provider/redisprovider.WithOwner:") || strings.Contains(err.Error(), ".New:") || strings.Contains(err.Error(), "sub.F:") {
		t.Errorf("a rename and one changed declaration: %v, want a failure naming only provider/redisprovider.WithOwner", err)
	}
	if err := check(now, current, release, write("CHANGELOG.md", renamed+"- `redisprovider.WithOwner` takes an int\n")); err != nil {
		t.Errorf("a rename and the changed declaration named: %v", err)
	}
	if err := check(now, current, release, write("CHANGELOG.md", renamed+"- `redis.WithOwner` takes an int\n")); err != nil {
		t.Errorf("a rename and the changed declaration named by its old name: %v", err)
	}
	if err := check(now, current, release, write("CHANGELOG.md", "## Unreleased\n- `redisprovider.WithOwner` takes an int\n")); err == nil {
		t.Error("no rename said: passed, want the moved declarations listed")
	}
}

// TestSnapshot: the snapshot of this repository lists exported declarations with
// their package, leaves out internal packages, commands, unexported names and
// doc comments.
func TestSnapshot(t *testing.T) {
	t.Chdir("../..")
	lines, err := snapshot(".")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{
		"pipestate.ErrClosed: var ErrClosed = ",
		"provider/redisprovider.Provider.KeyPrefix: func (p *Provider) KeyPrefix() string",
		"provider/redisprovider.New: func New(client goredis.UniversalClient, opts ...Option) (*Provider, error)",
		"examples/custombackend/sqlite.",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the snapshot lacks %q", want)
		}
	}
	for _, bad := range []string{"internal/", "cmd/pipestate", "examples/quickstart", "newTelemetry", "kept in Redis"} {
		if strings.Contains(all, bad) {
			t.Errorf("the snapshot has %q", bad)
		}
	}
}
