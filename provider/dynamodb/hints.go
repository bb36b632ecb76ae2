package dynamodb

import "sync"

// maxHints bounds the entries of each hints map an instance keeps.
const maxHints = 10000

// hints remembers, per key, what this instance last wrote or read, so that its
// next write can skip a round trip or a refused attempt. A hint may be stale
// (another instance wrote since); every write that uses one is conditioned on
// it, so a stale hint costs the refusal it would have saved, never a wrong
// write. The map is cleared when it reaches maxHints: losing hints costs one
// round trip per key. The zero value is ready; it is safe for concurrent use.
type hints[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

// get returns key's hint.
func (h *hints[V]) get(key string) (V, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[key]
	return v, ok
}

// put sets key's hint.
func (h *hints[V]) put(key string, v V) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxHints {
		h.m = make(map[string]V)
	}
	h.m[key] = v
}
