package models_test

import (
	"testing"

	"github.com/histrim/history/models"
	"github.com/histrim/history/tiktoken"
)

// TestTokenizerAgreesWithTiktoken checks every OpenAI name of the table
// against the tiktoken subpackage's mapping, so the two never disagree on
// which encoding counts a model exactly.
func TestTokenizerAgreesWithTiktoken(t *testing.T) {
	names, providers := models.Names()
	checked := 0
	for i, name := range names {
		if providers[i] != "openai" {
			continue
		}
		m, err := models.Lookup(name)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", name, err)
		}
		enc, ok := tiktoken.EncodingForModel(name)
		if !ok || enc != m.Tokenizer {
			t.Errorf("%s: table tokenizer %q, tiktoken %q (known %v)", name, m.Tokenizer, enc, ok)
		}
		checked++
	}
	if checked < 30 {
		t.Fatalf("checked %d OpenAI names, want the whole OpenAI part of the table", checked)
	}
	// The table names no tokenizer for models tiktoken does not count exactly.
	for i, name := range names {
		if providers[i] == "openai" {
			continue
		}
		if m, _ := models.Lookup(name); m.Tokenizer != "" {
			t.Errorf("%s (%s): tokenizer %q, but only OpenAI models have a public one", name, providers[i], m.Tokenizer)
		}
	}
}
