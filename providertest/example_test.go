package providertest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/providertest"
)

// testStorage is one test's storage and clock: every provider Open returns for a
// test shares them, as clients of one server share its data.
type testStorage struct {
	mu    sync.Mutex
	now   time.Time
	first *memprovider.Provider
}

func (s *testStorage) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *testStorage) advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

// A minimal harness: Open gives each test its own storage (here a memprovider and
// its handles; for your backend, a fresh key prefix, table or file, dropped in
// t.Cleanup), and Sleep and Now move and read the clock the providers were opened
// with, so the expiry and retention tests run without waiting. Your backend's
// test file then holds one function:
//
//	func TestConformance(t *testing.T) { providertest.Run(t, harness) }
//
// Features says what the harness turns on; each optional field it leaves unset
// skips the subtests it names, with that reason in the output.
func Example_harness() {
	var tests sync.Map // t.Name() -> *testStorage
	storage := func(t *testing.T) *testStorage {
		v, _ := tests.LoadOrStore(t.Name(), &testStorage{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		return v.(*testStorage)
	}
	harness := providertest.Harness{
		Open: func(t *testing.T) provider.Provider {
			s := storage(t)
			s.mu.Lock()
			defer s.mu.Unlock()
			var p *memprovider.Provider
			var err error
			if s.first == nil {
				p, err = memprovider.New(memprovider.WithClock(s.Now))
				s.first = p
			} else {
				p, err = s.first.NewHandle(memprovider.WithClock(s.Now))
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Stop(t.Context()) })
			return p
		},
		Sleep: func(t *testing.T, d time.Duration) { storage(t).advance(d) },
		Now:   func(t *testing.T) time.Time { return storage(t).Now() },
	}
	for _, f := range harness.Features() {
		switch {
		case f.Set && len(f.Enables) > 0:
			fmt.Printf("%s turns on %s\n", f.Field, strings.Join(f.Enables, ", "))
		case f.Set:
			fmt.Printf("%s sharpens %s\n", f.Field, f.Effect)
		}
	}
	// Output:
	// Sleep turns on Readiness/kept_within_readiness_ttl, Expiry/re_put_mid_ttl/*, Retention/*
	// Now sharpens the clock the fill checks (CreatedAt, Timestamp, WrittenAt, ExpiresAt...) compare with; nil reads it through a write of the group's own store
}
