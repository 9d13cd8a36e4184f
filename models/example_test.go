package models_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/histrim/history/models"
)

func ExampleLookup() {
	for _, name := range []string{
		"gpt-4o-2024-08-06",
		"us.anthropic.claude-sonnet-4-20250514-v1:0",
		"publishers/google/models/gemini-2.5-pro",
		"gpt-4", // not gpt-4o: unknown names are errors, never guesses
	} {
		m, err := models.Lookup(name)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %s, window %d, output %d, tokenizer %q, cache %v\n",
			name, m.Name, m.Window, m.Output, m.Tokenizer, m.CacheRetention)
	}
	// Output:
	// gpt-4o-2024-08-06: gpt-4o, window 128000, output 16384, tokenizer "o200k_base", cache 24h0m0s
	// us.anthropic.claude-sonnet-4-20250514-v1:0: claude-sonnet-4-20250514, window 200000, output 64000, tokenizer "", cache 5m0s
	// publishers/google/models/gemini-2.5-pro: gemini-2.5-pro, window 1048576, output 65535, tokenizer "", cache 0s
	// history/models: unknown model "gpt-4" (not in the table: give the window yourself, or use Discover for a local or routed server)
}

func ExampleDiscover() {
	// A stand-in for llama.cpp's llama-server started with -c 16384 -np 2:
	// each of its two slots, and so each request, gets 8,192 tokens.
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/props" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"default_generation_settings":{"n_ctx":8192},"total_slots":2}`)
	}))
	defer server.Close()

	m, err := models.Discover(context.Background(), nil, server.URL+"/v1", "qwen3-8b")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Provider, m.Window)
	// Output:
	// llamacpp 8192
}
