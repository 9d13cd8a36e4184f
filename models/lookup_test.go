package models

import (
	"errors"
	"strings"
	"testing"
)

// realNames are model names as providers, clouds, routers and SDKs spell
// them in requests and configurations, each with the row it must resolve
// to and where that spelling is used.
var realNames = []struct {
	in, want, reason string
}{
	// OpenAI API names and dated snapshots.
	{"gpt-4o", "gpt-4o", "OpenAI alias"},
	{"gpt-4o-2024-08-06", "gpt-4o", "the snapshot the gpt-4o alias pointed to; same limits"},
	{"gpt-4o-2024-11-20", "gpt-4o", "later snapshot, 16,384 output like 2024-08-06 (Azure model list)"},
	{"gpt-4o-2024-05-13", "gpt-4o-2024-05-13", "first snapshot: its own row, 4,096 output tokens"},
	{"gpt-4o-mini", "gpt-4o-mini", "must not become gpt-4o"},
	{"gpt-4o-mini-2024-07-18", "gpt-4o-mini", "dated snapshot of gpt-4o-mini"},
	{"gpt-4.1-2025-04-14", "gpt-4.1", "dated snapshot of gpt-4.1"},
	{"gpt-4.1-nano", "gpt-4.1-nano", "must not become gpt-4.1"},
	{"o3-mini-2025-01-31", "o3-mini", "dated snapshot of o3-mini"},
	{"o4-mini", "o4-mini", "reasoning model"},
	{"gpt-5-2025-08-07", "gpt-5", "GPT-5 snapshot"},
	{"gpt-5.1-codex-max", "gpt-5.1-codex-max", "Codex model name"},
	{"gpt-5.5", "gpt-5.5", "the newest GPT in the table"},
	{"gpt-3.5-turbo-0125", "gpt-3.5-turbo", "dated GPT-3.5 snapshot"},
	{"ft:gpt-4o-mini-2024-07-18:acme::9xYz1AbC", "gpt-4o-mini", "OpenAI fine-tune: the base model's limits"},
	// Azure OpenAI model names.
	{"gpt-35-turbo", "gpt-3.5-turbo", "Azure's name for gpt-3.5-turbo"},
	{"gpt-5.1-chat", "gpt-5.1-chat-latest", "Azure's name for gpt-5.1-chat-latest"},
	{"gpt-5-chat", "gpt-5-chat-latest", "Azure's name for gpt-5-chat-latest"},
	// OpenRouter and gateway slugs.
	{"openai/gpt-4o", "gpt-4o", "OpenRouter slug"},
	{"openai/gpt-5-mini", "gpt-5-mini", "OpenRouter slug"},
	{"anthropic/claude-sonnet-4.5", "claude-sonnet-4-5-20250929", "OpenRouter writes Claude versions with dots"},
	{"anthropic/claude-3.5-sonnet", "claude-3-5-sonnet-20241022", "OpenRouter's Claude 3.5 Sonnet (October 2024 version)"},
	{"anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet-20250219", "OpenRouter thinking variant of the same model"},
	{"anthropic/claude-opus-4.1", "claude-opus-4-1-20250805", "OpenRouter slug with dotted version"},
	{"google/gemini-2.5-pro", "gemini-2.5-pro", "OpenRouter slug"},
	{"x-ai/grok-4-fast", "grok-4-fast-reasoning", "OpenRouter slug; grok-4-fast is xAI's alias of the reasoning variant"},
	{"x-ai/grok-4.1-fast", "grok-4-1-fast-reasoning", "OpenRouter slug"},
	{"openrouter/anthropic/claude-3.5-sonnet", "claude-3-5-sonnet-20241022", "LiteLLM's openrouter/ prefix"},
	{"qwen/qwen3-max", "qwen3-max", "OpenRouter slug"},
	{"meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b-instruct", "Hugging Face / Azure name, any case"},
	// Anthropic API names, aliases and -latest.
	{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "Anthropic alias for the dated id"},
	{"claude-3-5-sonnet-20241022", "claude-3-5-sonnet-20241022", "dated id"},
	{"claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", "-latest alias"},
	{"claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219", "-latest alias"},
	{"claude-3-5-haiku-latest", "claude-3-5-haiku-20241022", "-latest alias"},
	{"claude-sonnet-4-0", "claude-sonnet-4-20250514", "Anthropic alias"},
	{"claude-haiku-4-5", "claude-haiku-4-5-20251001", "Anthropic alias"},
	{"claude-opus-4-6", "claude-opus-4-6", "dateless id from the 4.6 generation on"},
	{"claude-opus-5-5", "claude-opus-5-5", "current Opus"},
	// Amazon Bedrock.
	{"anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet-20241022", "Bedrock model id"},
	{"us.anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet-20241022", "Bedrock US cross-region profile"},
	{"anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku-20240307", "Bedrock model id"},
	{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929", "Bedrock global profile"},
	{"eu.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet-20250219", "Bedrock EU profile"},
	{"anthropic.claude-opus-4-6-v1", "claude-opus-4-6", "the last Bedrock id with a -v1 suffix"},
	{"anthropic.claude-sonnet-4-6", "claude-sonnet-4-6", "Bedrock ids have no suffix from Sonnet 4.6 on"},
	{"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet-20240620", "Bedrock foundation-model ARN"},
	{"arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4-20250514", "Bedrock inference-profile ARN"},
	{"meta.llama3-1-70b-instruct-v1:0", "llama-3.1-70b-instruct", "Bedrock Llama id"},
	{"us.meta.llama3-1-70b-instruct-v1:0", "llama-3.1-70b-instruct", "Bedrock Llama cross-region profile"},
	// Vertex AI and the Gemini API.
	{"claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet-20241022", "Vertex name of Claude 3.5 Sonnet v2"},
	{"claude-sonnet-4@20250514", "claude-sonnet-4-20250514", "Vertex @date form"},
	{"claude-haiku-4-5@20251001", "claude-haiku-4-5-20251001", "Vertex @date form (Anthropic's example)"},
	{"claude-opus-4-1@20250805", "claude-opus-4-1-20250805", "Vertex @date form"},
	{"publishers/google/models/gemini-2.5-pro", "gemini-2.5-pro", "Vertex publisher path"},
	{"projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash", "gemini-2.5-flash", "Vertex full resource path"},
	{"projects/p/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929", "claude-sonnet-4-5-20250929", "Vertex full path of a Claude model"},
	{"models/gemini-2.0-flash", "gemini-2.0-flash", "Gemini API resource name"},
	{"gemini-2.0-flash-001", "gemini-2.0-flash", "Gemini stable version id"},
	{"gemini-3.1-pro-preview-customtools", "gemini-3.1-pro-preview", "Gemini's custom-tools endpoint of the same model"},
	// Other providers.
	{"grok-4-0709", "grok-4", "xAI dated id"},
	{"DeepSeek-V4-Pro", "deepseek-v4-pro", "Azure's spelling, any case"},
	{"mistral-large-2512", "mistral-large-2512", "Mistral dated id"},
	// Case and whitespace.
	{"  GPT-4o\n", "gpt-4o", "surrounding whitespace, upper case"},
	{"Claude-Sonnet-4-5", "claude-sonnet-4-5-20250929", "mixed case"},
}

// mustNotResolve are names that are not models of the table (or no
// model), many one loose prefix match away from one that is.
var mustNotResolve = []struct{ in, reason string }{
	{"", "empty"},
	{"   ", "only whitespace"},
	{"gpt-4o-mini-2", "not a model; no prefix matching"},
	{"gpt-4o-2025-01-01", "a snapshot the table does not list: its limits are not known"},
	{"gpt-5.6", "not in the table (no source found)"},
	{"gpt-6-sol", "not in the table (no source found)"},
	{"claude-3", "a family, not a model"},
	{"claude-sonnet", "a family, not a model"},
	{"claude-3-5-sonnet-2024", "truncated date"},
	{"gemini-2.5", "a family, not a model"},
	{"gemini-1.5-pro", "retired; not in the table"},
	{"llama3", "an Ollama tag: use Discover"},
	{"anthropic.", "Bedrock vendor prefix alone"},
	{"us.", "Bedrock geo prefix alone"},
	{"@20241022", "a Vertex version alone"},
	{"models/", "a resource path without a model"},
	{"openai/", "a router prefix without a model"},
	{"x-ai/grok-4-fast:free", "OpenRouter's free variant has other limits"},
	{"anthropic/claude-3.5-sonnet:extended", "OpenRouter's extended variant has other limits"},
	{"ft:", "a fine-tune without a base"},
	{"gpt-4o-v1", "a version suffix is cut only from a Bedrock id"},
	{"anthropic.claude-3-5-sonnet-20241022-v2:0:1", "not a Bedrock version suffix"},
	{"gpt-4o:thinking:extra", "stacked suffixes"},
	{"mistral-large-latest", "a moving alias no Mistral page ties to a row"},
	{"deepseek-chat", "a moving alias (64K, 128K, then 1M): no current source"},
	{strings.Repeat("gpt-4o", 100), "longer than any name"},
	{"gpt-4o\x00", "NUL byte"},
}

func TestLookupRealNames(t *testing.T) {
	if len(realNames) < 50 {
		t.Fatalf("%d real names, want at least 50", len(realNames))
	}
	for _, tc := range realNames {
		m, err := Lookup(tc.in)
		if err != nil {
			t.Errorf("Lookup(%q) (%s): %v", tc.in, tc.reason, err)
			continue
		}
		if m.Name != tc.want {
			t.Errorf("Lookup(%q) (%s) = %q, want %q", tc.in, tc.reason, m.Name, tc.want)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, tc := range mustNotResolve {
		m, err := Lookup(tc.in)
		if err == nil {
			t.Errorf("Lookup(%q) (%s) = %q, want an error", tc.in, tc.reason, m.Name)
			continue
		}
		if !errors.Is(err, ErrUnknownModel) {
			t.Errorf("Lookup(%q): error %v does not wrap ErrUnknownModel", tc.in, err)
		}
		var ue *UnknownModelError
		if !errors.As(err, &ue) || ue.Name != tc.in {
			t.Errorf("Lookup(%q): error %#v is not an *UnknownModelError with the name", tc.in, err)
		}
		if m != (Model{}) {
			t.Errorf("Lookup(%q) returned %+v with its error, want the zero Model", tc.in, m)
		}
		if !strings.HasPrefix(err.Error(), "history/models: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	}
}

// TestLookupNoLooseFamily checks the families a loose prefix match would
// confuse: each resolves to itself or not at all, never to its neighbour.
func TestLookupNoLooseFamily(t *testing.T) {
	for _, name := range []string{"gpt-4", "gpt-4o-mini", "gpt-4.1-mini", "o3-mini", "o1-mini", "gpt-5-mini", "gpt-5.4-mini", "claude-3-5-haiku", "gemini-2.5-flash-lite", "gemini-2.0-flash-lite", "grok-4-fast-non-reasoning"} {
		m, err := Lookup(name)
		if err == nil && m.Name != name && !contains(index, name) {
			t.Errorf("Lookup(%q) = %q: resolved to another model", name, m.Name)
		}
	}
	if m, err := Lookup("gpt-4"); err == nil && m.Name != "gpt-4" {
		t.Errorf(`Lookup("gpt-4") = %q, want gpt-4 itself or an error`, m.Name)
	}
}

func contains(idx map[string]*row, name string) bool {
	_, ok := idx[name]
	return ok
}

// TestLookupEveryRow resolves every canonical name and alias, as written
// and in upper case, to its own row.
func TestLookupEveryRow(t *testing.T) {
	for i := range table {
		r := &table[i]
		for _, n := range append([]string{r.name}, r.aliases...) {
			for _, spelling := range []string{n, strings.ToUpper(n), " " + n + " "} {
				m, err := Lookup(spelling)
				if err != nil || m.Name != r.name {
					t.Errorf("Lookup(%q) = %q, %v; want row %q", spelling, m.Name, err, r.name)
				}
			}
		}
	}
}

// TestLookupReturnsCopies checks that a caller editing a returned Model
// does not change the table.
func TestLookupReturnsCopies(t *testing.T) {
	m, _ := Lookup("gpt-4o")
	m.Window = 1
	again, _ := Lookup("gpt-4o")
	if again.Window != 128_000 {
		t.Fatalf("the table changed under a caller's edit: Window %d", again.Window)
	}
}
