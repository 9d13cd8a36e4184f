package models

import "time"

// row is one model of the table: its figures, where they come from, and
// the other exact names the provider or a cloud serves it under.
type row struct {
	name, provider string
	window, output int
	tokenizer      string
	cache          time.Duration
	source         string
	checked        string
	// aliases are other exact spellings of this model and of nothing else:
	// dated snapshots with the same limits, the provider's aliases, a
	// cloud's name for it. Lookup matches them exactly, like name.
	aliases []string
}

func (r *row) model() Model {
	return Model{
		Name:           r.name,
		Provider:       r.provider,
		Window:         r.window,
		Output:         r.output,
		Tokenizer:      r.tokenizer,
		CacheRetention: r.cache,
		Source:         r.source,
		Checked:        r.checked,
	}
}

// The pages the figures come from. docs/models.md says what each covers.
const (
	// Microsoft's documentation of the OpenAI models it serves (Azure
	// OpenAI in Foundry), which gives each model's context window and
	// output limit; OpenAI's own model pages were not reachable. Azure
	// deviations are noted in docs/models.md.
	srcAzureOpenAI = "https://learn.microsoft.com/azure/foundry/foundry-models/concepts/models-sold-directly-by-azure"
	// The same page's other providers (DeepSeek, Meta, Mistral, xAI), as
	// Azure serves them.
	srcAzureOthers = "https://learn.microsoft.com/azure/foundry/foundry-models/concepts/models-sold-directly-by-azure?pivots=azure-direct-others"

	srcClaudeHaiku55   = "https://platform.claude.com/docs/en/models/haiku-5-5/overview" // also the current lineup's comparison table
	srcClaudeFable5    = "https://platform.claude.com/docs/en/models/fable-5/overview"
	srcClaudeOpus5     = "https://platform.claude.com/docs/en/models/opus-5/overview"
	srcClaudeSonnet5   = "https://platform.claude.com/docs/en/models/sonnet-5/overview"
	srcClaudeOpus48    = "https://platform.claude.com/docs/en/models/opus-4-8/overview"
	srcClaudeSonnet46  = "https://platform.claude.com/docs/en/models/sonnet-4-6/overview"
	srcClaudeSonnet45  = "https://platform.claude.com/docs/en/models/sonnet-4-5/overview"
	srcClaudeOpus45    = "https://platform.claude.com/docs/en/models/opus-4-5/overview"
	srcClaudeModels    = "https://platform.claude.com/docs/en/models/overview"
	srcClaudeCatalog   = "https://github.com/anthropics/skills/blob/main/skills/claude-api/shared/models.md"
	srcClaudeLegacy    = "https://docs.anthropic.com/en/docs/about-claude/models/overview"
	srcGemini38Flash   = "https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/guides/gemini-3-8-flash"
	srcGemini35Flash   = "https://ai.google.dev/gemini-api/docs/models/gemini-3.5-flash"
	srcGemini31Pro     = "https://ai.google.dev/gemini-api/docs/models/gemini-3.1-pro-preview"
	srcGemini3Pro      = "https://ai.google.dev/gemini-api/docs/models/gemini-3-pro-preview"
	srcGemini25Pro     = "https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/gemini/2-5-pro"
	srcGemini25Flash   = "https://docs.oracle.com/en-us/iaas/Content/generative-ai/google-gemini-2-5-flash.htm"
	srcGemini25Lite    = "https://ai.google.dev/gemini-api/docs/models/gemini-2.5-flash-lite"
	srcGemini20Flash   = "https://ai.google.dev/gemini-api/docs/models/gemini-2.0-flash"
	srcGemini20Lite    = "https://ai.google.dev/gemini-api/docs/models/gemini-2.0-flash-lite"
	srcGrok4           = "https://vercel.com/ai-gateway/models/grok-4"
	srcGrok4Fast       = "https://openrouter.ai/x-ai/grok-4-fast"
	srcGrok41Fast      = "https://openrouter.ai/x-ai/grok-4.1-fast:free/api" // the page that gives the xAI-served window
	srcLlama31Bedrock  = "https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-meta-llama-3-1-70b-instruct.html"
	srcQwen3Max        = "https://vercel.com/ai-gateway/models/qwen3-max"
	srcQwen38Max       = "https://vercel.com/ai-gateway/models/qwen3.8-max-0902"
	srcMistralLarge3   = "https://vercel.com/ai-gateway/models/mistral-large-3"
	checked            = "2026-11-28"
	o200k              = "o200k_base"
	cl100k             = "cl100k_base"
	openaiCache        = 24 * time.Hour  // in-memory: gone within 1 h; extended: up to 24 h (docs/models.md)
	anthropicCache     = 5 * time.Minute // the default ephemeral cache, refreshed by each hit
	windowGPT5         = 400_000
	windowGPT55        = 1_050_000
	windowGPT41        = 1_047_576
	windowGeminiInput  = 1_048_576
	outputGeminiLatest = 65_536
)

// table holds the models, newest first within each provider. Adding a
// model is adding a row; every row is checked by TestTable.
var table = []row{
	// OpenAI.
	{"gpt-5.5", "openai", windowGPT55, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.4", "openai", windowGPT55, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.4-pro", "openai", windowGPT55, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.4-mini", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.4-nano", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.3-codex", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.3-chat-latest", "openai", 128_000, 16_384, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5.3-chat"}},
	{"gpt-5.2", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5.2-2025-12-11"}},
	{"gpt-5.2-codex", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.2-chat-latest", "openai", 128_000, 16_384, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5.2-chat"}},
	{"gpt-5.1", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5.1-2025-11-13"}},
	{"gpt-5.1-codex", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.1-codex-mini", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.1-codex-max", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5.1-chat-latest", "openai", 128_000, 16_384, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5.1-chat"}},
	{"gpt-5", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5-2025-08-07"}},
	{"gpt-5-mini", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5-mini-2025-08-07"}},
	{"gpt-5-nano", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5-nano-2025-08-07"}},
	{"gpt-5-codex", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-5-pro", "openai", windowGPT5, 128_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5-pro-2025-10-06"}},
	{"gpt-5-chat-latest", "openai", 128_000, 16_384, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-5-chat"}},
	{"gpt-oss-120b", "openai", 131_072, 131_072, o200k, 0, srcAzureOpenAI, checked, nil},
	{"gpt-oss-20b", "openai", 131_072, 131_072, o200k, 0, srcAzureOpenAI, checked, nil},
	{"gpt-4.1", "openai", windowGPT41, 32_768, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-4.1-2025-04-14"}},
	{"gpt-4.1-mini", "openai", windowGPT41, 32_768, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-4.1-mini-2025-04-14"}},
	{"gpt-4.1-nano", "openai", windowGPT41, 32_768, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-4.1-nano-2025-04-14"}},
	{"o4-mini", "openai", 200_000, 100_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"o4-mini-2025-04-16"}},
	{"o3", "openai", 200_000, 100_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"o3-2025-04-16"}},
	{"o3-pro", "openai", 200_000, 100_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"o3-pro-2025-06-10"}},
	{"o3-mini", "openai", 200_000, 100_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"o3-mini-2025-01-31"}},
	{"o1", "openai", 200_000, 100_000, o200k, openaiCache, srcAzureOpenAI, checked, []string{"o1-2024-12-17"}},
	{"o1-mini", "openai", 128_000, 65_536, o200k, openaiCache, srcAzureOpenAI, checked, []string{"o1-mini-2024-09-12"}},
	{"gpt-4o", "openai", 128_000, 16_384, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-4o-2024-08-06", "gpt-4o-2024-11-20"}},
	{"gpt-4o-2024-05-13", "openai", 128_000, 4_096, o200k, openaiCache, srcAzureOpenAI, checked, nil},
	{"gpt-4o-mini", "openai", 128_000, 16_384, o200k, openaiCache, srcAzureOpenAI, checked, []string{"gpt-4o-mini-2024-07-18"}},
	{"gpt-4-turbo", "openai", 128_000, 4_096, cl100k, 0, srcAzureOpenAI, checked, []string{"gpt-4-turbo-2024-04-09"}},
	{"gpt-3.5-turbo", "openai", 16_385, 4_096, cl100k, 0, srcAzureOpenAI, checked, []string{"gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106", "gpt-35-turbo"}},

	// Anthropic. Tokenizer: Anthropic publishes none.
	{"claude-fable-5-1", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeHaiku55, checked, nil},
	{"claude-opus-5-5", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeHaiku55, checked, nil},
	{"claude-sonnet-5-5", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeHaiku55, checked, nil},
	{"claude-haiku-5-5", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeHaiku55, checked, nil},
	{"claude-mythos-5-1", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeCatalog, checked, nil},
	{"claude-fable-5", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeFable5, checked, nil},
	{"claude-mythos-5", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeCatalog, checked, nil},
	{"claude-opus-5", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeOpus5, checked, nil},
	{"claude-sonnet-5", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeSonnet5, checked, nil},
	{"claude-opus-4-8", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeOpus48, checked, nil},
	{"claude-opus-4-7", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeCatalog, checked, nil},
	{"claude-opus-4-6", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeCatalog, checked, nil},
	{"claude-sonnet-4-6", "anthropic", 1_000_000, 128_000, "", anthropicCache, srcClaudeSonnet46, checked, nil},
	{"claude-haiku-4-5-20251001", "anthropic", 200_000, 64_000, "", anthropicCache, srcClaudeModels, checked, []string{"claude-haiku-4-5"}},
	{"claude-sonnet-4-5-20250929", "anthropic", 200_000, 64_000, "", anthropicCache, srcClaudeSonnet45, checked, []string{"claude-sonnet-4-5"}},
	{"claude-opus-4-5-20251101", "anthropic", 200_000, 64_000, "", anthropicCache, srcClaudeOpus45, checked, []string{"claude-opus-4-5"}},
	{"claude-opus-4-1-20250805", "anthropic", 200_000, 32_000, "", anthropicCache, srcClaudeLegacy, checked, []string{"claude-opus-4-1"}},
	{"claude-opus-4-20250514", "anthropic", 200_000, 32_000, "", anthropicCache, srcClaudeLegacy, checked, []string{"claude-opus-4-0", "claude-opus-4"}},
	{"claude-sonnet-4-20250514", "anthropic", 200_000, 64_000, "", anthropicCache, srcClaudeLegacy, checked, []string{"claude-sonnet-4-0", "claude-sonnet-4"}},
	{"claude-3-7-sonnet-20250219", "anthropic", 200_000, 64_000, "", anthropicCache, srcClaudeLegacy, checked, []string{"claude-3-7-sonnet-latest", "claude-3-7-sonnet"}},
	{"claude-3-5-sonnet-20241022", "anthropic", 200_000, 8_192, "", anthropicCache, srcClaudeLegacy, checked, []string{"claude-3-5-sonnet-latest", "claude-3-5-sonnet", "claude-3-5-sonnet-v2-20241022"}},
	{"claude-3-5-sonnet-20240620", "anthropic", 200_000, 8_192, "", anthropicCache, srcClaudeLegacy, checked, nil},
	{"claude-3-5-haiku-20241022", "anthropic", 200_000, 8_192, "", anthropicCache, srcClaudeLegacy, checked, []string{"claude-3-5-haiku-latest", "claude-3-5-haiku"}},
	{"claude-3-opus-20240229", "anthropic", 200_000, 4_096, "", anthropicCache, srcClaudeLegacy, checked, []string{"claude-3-opus-latest"}},
	{"claude-3-haiku-20240307", "anthropic", 200_000, 4_096, "", anthropicCache, srcClaudeLegacy, checked, nil},

	// Google Gemini. Window is the documented input limit (see Model.Window).
	// Implicit caching states no retention.
	{"gemini-3.8-flash", "google", windowGeminiInput, outputGeminiLatest, "", 0, srcGemini38Flash, checked, nil},
	{"gemini-3.7-flash", "google", windowGeminiInput, outputGeminiLatest, "", 0, srcGemini38Flash, checked, nil},
	{"gemini-3.5-flash", "google", windowGeminiInput, outputGeminiLatest, "", 0, srcGemini35Flash, checked, nil},
	{"gemini-3.1-pro-preview", "google", windowGeminiInput, outputGeminiLatest, "", 0, srcGemini31Pro, checked, []string{"gemini-3.1-pro-preview-customtools"}},
	{"gemini-3-pro-preview", "google", windowGeminiInput, outputGeminiLatest, "", 0, srcGemini3Pro, checked, nil},
	{"gemini-2.5-pro", "google", windowGeminiInput, 65_535, "", 0, srcGemini25Pro, checked, nil},
	{"gemini-2.5-flash", "google", windowGeminiInput, outputGeminiLatest, "", 0, srcGemini25Flash, checked, nil},
	{"gemini-2.5-flash-lite", "google", windowGeminiInput, outputGeminiLatest, "", 0, srcGemini25Lite, checked, nil},
	{"gemini-2.0-flash", "google", windowGeminiInput, 8_192, "", 0, srcGemini20Flash, checked, []string{"gemini-2.0-flash-001"}},
	{"gemini-2.0-flash-lite", "google", windowGeminiInput, 8_192, "", 0, srcGemini20Lite, checked, []string{"gemini-2.0-flash-lite-001"}},

	// xAI. Output 0: the output shares the window.
	{"grok-4", "xai", 256_000, 0, "", 0, srcGrok4, checked, []string{"grok-4-0709"}},
	{"grok-4-fast-reasoning", "xai", 2_000_000, 0, "", 0, srcGrok4Fast, checked, []string{"grok-4-fast"}},
	{"grok-4-fast-non-reasoning", "xai", 2_000_000, 0, "", 0, srcGrok4Fast, checked, nil},
	{"grok-4-1-fast-reasoning", "xai", 2_000_000, 0, "", 0, srcGrok41Fast, checked, []string{"grok-4-1-fast", "grok-4.1-fast"}},
	{"grok-4-1-fast-non-reasoning", "xai", 2_000_000, 0, "", 0, srcGrok41Fast, checked, nil},
	{"grok-code-fast-1", "xai", 256_000, 8_192, "", 0, srcAzureOthers, checked, nil},

	// DeepSeek, as Azure serves it (input limit as Window).
	{"deepseek-v4-pro", "deepseek", 1_000_000, 384_000, "", 0, srcAzureOthers, checked, nil},
	{"deepseek-v4-flash", "deepseek", 1_000_000, 384_000, "", 0, srcAzureOthers, checked, []string{"deepseek-v4-flash-0731"}},
	{"deepseek-v3.2", "deepseek", 128_000, 128_000, "", 0, srcAzureOthers, checked, nil},

	// Mistral.
	{"mistral-large-2512", "mistral", 262_144, 256_000, "", 0, srcMistralLarge3, checked, []string{"mistral-large-3"}},
	{"mistral-medium-3-5", "mistral", 128_000, 128_000, "", 0, srcAzureOthers, checked, nil},

	// Meta Llama, as Amazon Bedrock and Azure serve it.
	{"llama-4-maverick-17b-128e-instruct-fp8", "meta", 1_000_000, 0, "", 0, srcAzureOthers, checked, nil},
	{"llama-3.3-70b-instruct", "meta", 128_000, 8_192, "", 0, srcAzureOthers, checked, nil},
	{"llama-3.1-70b-instruct", "meta", 128_000, 4_000, "", 0, srcLlama31Bedrock, checked, []string{"llama3-1-70b-instruct"}},

	// Qwen, as Alibaba Cloud serves it.
	{"qwen3.8-max-0902", "qwen", 991_000, 128_000, "", 0, srcQwen38Max, checked, nil},
	{"qwen3-max", "qwen", 262_144, 65_536, "", 0, srcQwen3Max, checked, nil},
}
