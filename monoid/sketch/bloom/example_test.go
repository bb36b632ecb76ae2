package bloom_test

import (
	"fmt"

	"github.com/pipestate/pipestate/monoid/sketch/bloom"
)

func Example() {
	m, _ := bloom.NewWithEstimates(10_000, 0.01)
	seen := m.Combine(m.Delta("https://a.example"), m.Delta("https://b.example"))
	for _, url := range []string{"https://a.example", "https://c.example"} {
		maybe, _ := bloom.Contains(seen, url)
		fmt.Println(url, maybe)
	}
	// Output:
	// https://a.example true
	// https://c.example false
}
