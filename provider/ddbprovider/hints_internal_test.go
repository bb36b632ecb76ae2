package ddbprovider

import (
	"strconv"
	"testing"
)

// TestHintsKeepLastWrites holds hints to its doc: the last maxHints/2 keys put
// are remembered, with their newest values, and no more than maxHints are
// held. (A map cleared when full, as it first was, forgot all but one.)
func TestHintsKeepLastWrites(t *testing.T) {
	var h hints[int]
	const n = 3*maxHints + 7
	for i := range n {
		h.put(strconv.Itoa(i), i)
	}
	last := strconv.Itoa(n - 1)
	for range maxHints { // rewrites of a key held take no room
		h.put(last, -1)
	}
	for i := n - maxHints/2; i < n-1; i++ {
		if v, ok := h.get(strconv.Itoa(i)); !ok || v != i {
			t.Fatalf("hint %d = %d, %v; want %d (one of the last %d keys put)", i, v, ok, i, maxHints/2)
		}
	}
	if v, ok := h.get(last); !ok || v != -1 {
		t.Errorf("hint %s = %d, %v; want its newest value, -1", last, v, ok)
	}
	if held := len(h.cur) + len(h.prev); held > maxHints {
		t.Errorf("%d hints held, more than %d", held, maxHints)
	}
}
