package ddbprovider

import "sync"

// maxHints bounds the entries of each hints map an instance keeps; it
// remembers at least the last maxHints/2 keys it was told.
const maxHints = 10000

// hints remembers, per key, what this instance last wrote or read, so that its
// next write can skip a round trip or a refused attempt. A hint may be stale
// (another instance wrote since); every write that uses one is conditioned on
// it, so a stale hint costs the refusal it would have saved, never a wrong
// write. It keeps two generations of maxHints/2 keys: when the newer is full it
// becomes the older, and the older is dropped. Losing a hint costs one round
// trip. The zero value is ready; it is safe for concurrent use.
type hints[V any] struct {
	mu        sync.Mutex
	cur, prev map[string]V
}

// get returns key's hint.
func (h *hints[V]) get(key string) (V, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok := h.cur[key]; ok {
		return v, true
	}
	v, ok := h.prev[key]
	return v, ok
}

// put sets key's hint.
func (h *hints[V]) put(key string, v V) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		h.cur = make(map[string]V)
	}
	if _, held := h.cur[key]; !held && len(h.cur) >= maxHints/2 {
		h.prev, h.cur = h.cur, make(map[string]V)
	}
	h.cur[key] = v
}
