package redisstate

import "testing"

// TestClusterSlot checks clusterSlot against the slots Redis Cluster documents
// and answers (CLUSTER KEYSLOT).
func TestClusterSlot(t *testing.T) {
	for key, want := range map[string]uint16{
		"123456789":            12739, // CRC16/XMODEM check value 0x31C3
		"foo":                  12182,
		"bar":                  5061,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"foo{}{bar}":           8363, // an empty tag: the whole key
		"foo{{bar}}zap":        4015, // the tag is "{bar"
		"p:{e1}:isum:0":        clusterSlot("e1"),
	} {
		if got := clusterSlot(key); got != want {
			t.Errorf("clusterSlot(%q) = %d, want %d", key, got, want)
		}
	}
}

// TestGroupBy: groups keep the keys' order, hold at most mgetKeys keys, and
// cover every index once.
func TestGroupBy(t *testing.T) {
	keys := make([]string, 2*mgetKeys+5)
	for i := range keys {
		keys[i] = []string{"a", "b", "a", "c"}[i%4]
	}
	groups := groupBy(keys, func(k string) string { return k })
	seen := make([]bool, len(keys))
	for _, g := range groups {
		if len(g) == 0 || len(g) > mgetKeys {
			t.Fatalf("a group of %d keys", len(g))
		}
		for j, i := range g {
			if seen[i] || keys[i] != keys[g[0]] || (j > 0 && i <= g[j-1]) {
				t.Fatalf("group %v: index %d repeated, of another key, or out of order", g[:min(len(g), 5)], i)
			}
			seen[i] = true
		}
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("index %d in no group", i)
		}
	}
	if len(groups) != 4 { // a: 1,003 keys in 2 groups; b and c: 501 each
		t.Errorf("%d groups, want 4", len(groups))
	}
}
