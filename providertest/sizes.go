package providertest

import (
	"context"
	"errors"
	"testing"

	"github.com/pipestate/pipestate/provider"
)

const (
	// largeValue is the metadata size every backend must store.
	largeValue = 256 << 10
	// hugeValue is larger than some backends can store (DynamoDB: 400 KB items; Redis: 512 MB).
	hugeValue = 1 << 20
	// largeItems items of largeValue each are more than one page of a list query
	// in most stores (DynamoDB: 1 MB), so listing them needs pagination.
	largeItems = 6
)

// sizeCheck adapts one store to the size tests.
type sizeCheck struct {
	// put writes the test's entity with payload inside it (metadata, details...).
	put func(ctx context.Context, p provider.Provider, k ids, payload string) error
	// read returns the payload of the test's entity as stored, or found == false.
	read func(t *testing.T, p provider.Provider, k ids) (payload string, found bool)
}

// checkSizes adds the "too large" tests: 256 KB stores and round-trips; 1 MB either
// stores and round-trips or fails with ErrTooLarge writing nothing, also when it
// would replace a smaller value.
func (s *suite) checkSizes(t *testing.T, c sizeCheck) {
	t.Helper()
	test(t, "large_value_round_trips", func(t *testing.T) {
		p, k := s.open(t), newIDs(t)
		payload := bigString(largeValue)
		noErr(t, c.put(t.Context(), p, k, payload), "put 256 KB")
		got, found := c.read(t, p, k)
		if !found || got != payload {
			t.Fatalf("256 KB value: found=%v, %d bytes back, want it unchanged", found, len(got))
		}
	})
	test(t, "huge_value_too_large_or_stored", func(t *testing.T) {
		p, k := s.open(t), newIDs(t)
		payload := bigString(hugeValue)
		err := c.put(t.Context(), p, k, payload)
		got, found := c.read(t, p, k)
		switch {
		case err == nil:
			if !found || got != payload {
				t.Fatalf("1 MB value accepted, but found=%v with %d bytes back", found, len(got))
			}
		case errors.Is(err, provider.ErrTooLarge):
			if found {
				t.Fatalf("1 MB value rejected with ErrTooLarge, but something was written (%d bytes)", len(got))
			}
		default:
			t.Fatalf("1 MB value: got error %v, want nil or one wrapping ErrTooLarge", err)
		}
	})
	test(t, "huge_update_keeps_old_value", func(t *testing.T) {
		p, k := s.open(t), newIDs(t)
		noErr(t, c.put(t.Context(), p, k, "small"), "put small value")
		payload := bigString(hugeValue)
		err := c.put(t.Context(), p, k, payload)
		want := payload
		if errors.Is(err, provider.ErrTooLarge) {
			want = "small"
		} else {
			noErr(t, err, "put 1 MB value (want nil or ErrTooLarge)")
		}
		got, found := c.read(t, p, k)
		if !found || got != want {
			t.Fatalf("after a 1 MB update (err %v): found=%v with %d bytes, want %d bytes", err, found, len(got), len(want))
		}
	})
}

// payloadOf returns m["payload"] as a string.
func payloadOf(m map[string]any) string {
	s, _ := m["payload"].(string)
	return s
}
