package dynamodb

import (
	"strconv"
	"testing"
)

// TestHintsKeepLastWrites holds hints to the package doc's capacity table: "an
// instance remembers where it put the copies of its last 10,000 writes". FAILS:
// put clears the whole map when it holds maxHints entries, so after 10,000
// records the 10,001st write forgets all the others (the next rewrite of any of
// them pays the refused attempt). A cost, not a correctness, break: a missing
// hint only costs a round trip.
func TestHintsKeepLastWrites(t *testing.T) {
	var h hints[int]
	for i := range maxHints + 1 {
		h.put(strconv.Itoa(i), i)
	}
	missing := 0
	for i := 1; i <= maxHints; i++ { // the last 10,000 writes
		if _, ok := h.get(strconv.Itoa(i)); !ok {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of the last %d writes' hints forgotten; the doc says the last %d are remembered", missing, maxHints, maxHints)
	}
}
