package statetest

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pipestate/pipestate/state"
)

// testEntityLengthInBytes: Key.Entity is limited in bytes, not runes. Entities
// of 2-, 3- and 4-byte runes exactly at the limit are stored and read back;
// ones over it in bytes (513 to 2,048 bytes for the default limit) though
// within it in runes are refused with state.ErrInvalidArgument by every method
// that takes a key (MergeUpdate, Get, GetMany, and MergeUpdateOnce and
// MergeMany where the store has them), and write nothing: the entity cut to
// the limit, as a store that truncates would keep it, is still missing.
func testEntityLengthInBytes[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	ctx := t.Context()
	limit := h.maxEntityLen()
	for _, r := range []string{"é", "\u4e00", "\U0001F600"} {
		w := len(r)
		at := strings.Repeat("y", limit%w+w) + strings.Repeat(r, limit/w-1) // exactly limit bytes
		mustMerge(t, s, state.Key{Entity: at}, h.Delta(0), 0)
		wantValue(t, h, s, state.Key{Entity: at}, h.fold(0, 1))
		for _, runes := range []int{limit/w + 1, limit} {
			over := state.Key{Entity: strings.Repeat(r, runes)}
			what := fmt.Sprintf("an entity of %d %d-byte runes (%d bytes)", runes, w, len(over.Entity))
			wantInvalid(t, "MergeUpdate of "+what, s.MergeUpdate(ctx, over, h.Delta(1), 0))
			_, _, err := s.Get(ctx, over)
			wantInvalid(t, "Get of "+what, err)
			_, _, err = s.GetMany(ctx, []state.Key{{Entity: "fine"}, over})
			wantInvalid(t, "GetMany of "+what, err)
			if os, ok := s.(state.OnceStore[V]); ok {
				_, err := os.MergeUpdateOnce(ctx, "entity-bytes", over, h.Delta(1), 0)
				wantInvalid(t, "MergeUpdateOnce of "+what, err)
			}
			if bs, ok := s.(state.BatchStore[V]); ok {
				wantInvalid(t, "MergeMany of "+what, bs.MergeMany(ctx, []state.Update[V]{{Key: over, Delta: h.Delta(1)}}))
			}
			cut := over.Entity[:limit]
			for !utf8.ValidString(cut) {
				cut = cut[:len(cut)-1]
			}
			wantMissing(t, s, state.Key{Entity: cut})
		}
	}
}
