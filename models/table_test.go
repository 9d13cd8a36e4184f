package models

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestTable checks every row of the table: the invariants Lookup's
// callers rely on, and the bookkeeping that keeps the table honest.
func TestTable(t *testing.T) {
	providers := map[string]bool{"openai": true, "anthropic": true, "google": true, "mistral": true, "deepseek": true, "xai": true, "meta": true, "qwen": true}
	tokenizers := map[string]bool{"": true, "o200k_base": true, "cl100k_base": true}
	today := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	seen := map[string]string{}
	for i := range table {
		r := &table[i]
		m := r.model()
		if m.Name == "" || m.Name != strings.ToLower(strings.TrimSpace(m.Name)) {
			t.Errorf("row %d: name %q must be lowercase and trimmed", i, m.Name)
		}
		if !providers[m.Provider] {
			t.Errorf("%s: provider %q is not one of the documented providers", m.Name, m.Provider)
		}
		if m.Window < 1 || m.Output < 0 || m.Output > m.Window {
			t.Errorf("%s: window %d, output %d: want 0 <= output <= window, window > 0", m.Name, m.Window, m.Output)
		}
		if !tokenizers[m.Tokenizer] {
			t.Errorf("%s: tokenizer %q is not an encoding the tiktoken subpackage names", m.Name, m.Tokenizer)
		}
		if m.CacheRetention < 0 || m.CacheRetention > 24*time.Hour {
			t.Errorf("%s: cache retention %v out of range", m.Name, m.CacheRetention)
		}
		if u, err := url.Parse(m.Source); err != nil || u.Scheme != "https" || u.Host == "" {
			t.Errorf("%s: source %q is not an https URL", m.Name, m.Source)
		}
		if d, err := time.Parse("2006-01-02", m.Checked); err != nil || d.After(today) {
			t.Errorf("%s: checked %q is not a date up to %s", m.Name, m.Checked, today.Format("2006-01-02"))
		}
		for _, n := range append([]string{r.name}, r.aliases...) {
			if n != strings.ToLower(n) {
				t.Errorf("%s: alias %q must be lowercase", m.Name, n)
			}
			if other, dup := seen[n]; dup {
				t.Errorf("%q names both %s and %s", n, other, m.Name)
			}
			seen[n] = m.Name
			if resolved, ok := resolve(n); !ok || resolved != r {
				t.Errorf("%q does not resolve to its own row %s", n, m.Name)
			}
		}
	}
	if len(index) != len(seen) {
		t.Errorf("index holds %d names, the table %d", len(index), len(seen))
	}
}

// TestTableCovers checks that the table holds the providers the package
// documents, with the model families users still name.
func TestTableCovers(t *testing.T) {
	for _, name := range []string{
		"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini", "gpt-5", "gpt-5.5",
		"claude-3-5-sonnet-20241022", "claude-3-7-sonnet-20250219", "claude-sonnet-4-20250514", "claude-sonnet-4-5-20250929", "claude-opus-4-8", "claude-opus-5-5",
		"gemini-2.0-flash", "gemini-2.5-pro", "gemini-3.8-flash",
		"mistral-large-2512", "deepseek-v4-pro", "grok-4", "llama-3.3-70b-instruct", "qwen3-max",
	} {
		if _, err := Lookup(name); err != nil {
			t.Errorf("Lookup(%q): %v", name, err)
		}
	}
}
