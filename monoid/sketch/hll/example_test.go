package hll_test

import (
	"fmt"

	"github.com/pipestate/pipestate/monoid/sketch/hll"
)

func Example() {
	m, _ := hll.New(hll.DefaultPrecision)
	monday := m.Delta("ann", "bob", "cy")
	tuesday := m.Delta("bob", "dee")
	week, err := m.TryCombine(monday, tuesday)
	if err != nil {
		panic(err)
	}
	n, _ := hll.Estimate(week)
	fmt.Println("distinct visitors:", n)
	// Output: distinct visitors: 4
}
