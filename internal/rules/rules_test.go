package rules_test

import (
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/rules"
)

func TestLooseReasoningIsSet(t *testing.T) {
	if _, ok := rules.LooseReasoning().(history.Option); !ok {
		t.Fatal("LooseReasoning does not return a history.Option")
	}
}
