package history_test

import (
	"fmt"

	"github.com/histrim/history"
)

func ExampleBudget_Input() {
	b := history.Budget{Window: 128_000, Output: 8_000, Reserve: 2_000, Limit: 100_000}
	fmt.Println(b.Input())
	// Output: 100000
}
