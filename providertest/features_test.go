package providertest_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/internal/testkit/memorytest"
	"github.com/pipestate/pipestate/providertest"
)

// matches reports whether the subtest name (Group/subtest...) is one that the
// Enables pattern names.
func matches(pattern, name string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(name, prefix+"/")
	}
	return name == pattern
}

// TestFeaturesDocumented: every optional Harness field is in Harness.Features
// once, every Features entry is a field, every subtest it enables exists (in
// testdata/subtests.golden), and doc.go points to Features.
func TestFeaturesDocumented(t *testing.T) {
	fs := providertest.Harness{}.Features()
	var listed []string
	for _, f := range fs {
		listed = append(listed, f.Field)
		if f.Set {
			t.Errorf("Features of a zero Harness: %s is set", f.Field)
		}
		if f.Effect == "" {
			t.Errorf("Features: %s says nothing of its effect", f.Field)
		}
	}
	typ := reflect.TypeFor[providertest.Harness]()
	var fields []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Open" || !f.IsExported() {
			continue // required, or the suite's own, not a feature
		}
		fields = append(fields, f.Name)
		if n := slices.Index(listed, f.Name); n < 0 {
			t.Errorf("Harness.%s is not in Harness.Features: add it to the features table (features.go), with the subtests it enables", f.Name)
		}
	}
	for _, name := range listed {
		if !slices.Contains(fields, name) {
			t.Errorf("Harness.Features lists %s, which is not an optional Harness field", name)
		}
	}
	if !slices.Equal(fields, listed) {
		t.Errorf("Harness.Features lists %v, want the optional Harness fields in struct order, %v", listed, fields)
	}

	golden, err := os.ReadFile(subtestsGolden)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(golden), "\n") {
		if name, ok := strings.CutPrefix(line, "full/"); ok {
			names = append(names, name)
		}
	}
	for _, f := range fs {
		for _, pattern := range f.Enables {
			if !slices.ContainsFunc(names, func(n string) bool { return matches(pattern, n) }) {
				t.Errorf("Harness.Features: %s enables %q, which names no subtest of the suite (%s)", f.Field, pattern, subtestsGolden)
			}
		}
	}

	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "Harness.Features") {
		t.Error("doc.go does not point to Harness.Features")
	}

	set := memorytest.New().Harness(nil).Features()
	if i := slices.IndexFunc(set, func(f providertest.Feature) bool { return f.Field == "Corrupt" }); i < 0 || !set[i].Set {
		t.Error("Features of the memory harness: Corrupt is not set")
	}
}

// TestFeaturesEnable: in a run of the whole suite, a subtest that a feature
// enables runs when the harness sets the feature and skips when it does not:
// the full memory harness (which sets neither OpenMaxEvents nor
// MaxMarkerWrites) and one with only Open, Sleep and Now (TestSubtestList).
func TestFeaturesEnable(t *testing.T) {
	list := listSuite(t)
	full := memorytest.New().Harness(nil)
	minimal := providertest.Harness{Open: full.Open, Sleep: full.Sleep, Now: full.Now}
	for _, run := range []struct {
		prefix string
		h      providertest.Harness
	}{{"full/", full}, {"minimal/", minimal}} {
		for _, f := range run.h.Features() {
			for _, pattern := range f.Enables {
				for _, name := range list.ran {
					sub, ok := strings.CutPrefix(name, run.prefix)
					if !ok || !matches(pattern, sub) {
						continue
					}
					_, skipped := slices.BinarySearch(list.skipped, name)
					switch {
					case f.Set && skipped && run.prefix == "full/":
						t.Errorf("%s skipped, though the harness sets %s, which enables it", name, f.Field)
					case !f.Set && !skipped && !skippedAbove(list.skipped, name):
						t.Errorf("%s ran, though the harness does not set %s, which it needs", name, f.Field)
					}
				}
			}
		}
	}
}

// skippedAbove reports whether a test above name (its group) skipped.
func skippedAbove(skipped []string, name string) bool {
	for i := strings.LastIndex(name, "/"); i > 0; i = strings.LastIndex(name[:i], "/") {
		if _, ok := slices.BinarySearch(skipped, name[:i]); ok {
			return true
		}
	}
	return false
}
