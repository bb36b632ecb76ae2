package tiered

import "strconv"

// codec encodes values of the store's type for Redis.
type codec[V any] struct {
	encode func(V) string
	decode func(string) (V, error)
}

// codecOf returns the codec of V: decimal text for numbers (float64 exactly,
// with the shortest representation that parses back to the same value), the
// bytes as they are for []byte.
func codecOf[V int64 | float64 | []byte]() codec[V] {
	var c any
	switch any(*new(V)).(type) {
	case int64:
		c = codec[int64]{
			encode: func(v int64) string { return strconv.FormatInt(v, 10) },
			decode: func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) },
		}
	case float64:
		c = codec[float64]{
			encode: func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) },
			decode: func(s string) (float64, error) { return strconv.ParseFloat(s, 64) },
		}
	default:
		c = codec[[]byte]{
			encode: func(v []byte) string { return string(v) },
			decode: func(s string) ([]byte, error) { return []byte(s), nil },
		}
	}
	return c.(codec[V])
}
