package topk_test

import (
	"fmt"

	"github.com/pipestate/pipestate/monoid/sketch/topk"
)

func Example() {
	m, _ := topk.New(2)
	a, _ := m.Delta("/home", "/home", "/about", "/home")
	b, _ := m.Delta("/pricing", "/home", "/about")
	top, _ := topk.Top(m.Combine(a, b))
	// True counts: /home 4, /about 2, /pricing 1.
	for _, it := range top {
		fmt.Printf("%s: between %d and %d\n", it.Value, it.Count, it.Count+it.Error)
	}
	// Output:
	// /home: between 3 and 4
	// /about: between 1 and 2
}
