package history

// This file owns the provider table of the overflow classifier: one row per
// provider (or server) with the phrases that mark its refusal of a request
// for length, the shapes that carry its numbers, and where the text was
// found; and the rows of errors that look like overflows but are not. The
// shapes and readSizes, which walks them, are in overflow_sizes.go. Adding a
// provider is adding a row: the tests in overflow_providers_test.go carry
// the real messages.

// overflowRow is what one provider says when a request does not fit.
type overflowRow struct {
	// provider names who sends the text.
	provider string
	// source says where the text was found: a public issue or pull request
	// (owner/repo#N), a file in a public repository, or a documentation page.
	// overflow_providers_test.go keeps each real message with its source.
	source string
	// phrases mark the refusal. Each is matched as a run of whole words in
	// normalized text (see normalizeText and phraseIndex): letters and digits
	// only, so "context_length_exceeded" and "context length exceeded" are
	// the same phrase, and a phrase never matches inside an identifier.
	phrases []string
	// shapes carry the numbers, tried in order (see readSizes).
	shapes []shape
}

// notOverflowRow is an error that resembles an overflow but that no trim can
// fix: a rate or per-minute token limit, a quota, billing, throttling, or a
// request for more output than the model gives. Any of its phrases anywhere
// in an error tree rules an overflow out.
type notOverflowRow struct {
	what    string
	source  string
	phrases []string
}

// overflowRows is the provider table. Rows are walked in order and so are
// their shapes; the first shape that states both numbers wins over any
// shape that states only one (see readSizes).
var overflowRows = []overflowRow{
	{
		provider: "OpenAI (Chat Completions, legacy Completions), Azure OpenAI, and the OpenAI-compatible servers that copy its text (vLLM, DeepSeek, OpenRouter, FastChat, Together, Fireworks, SambaNova)",
		source:   "chathub-dev/chathub#126, mckaywrigley/chatbot-ui#102, stanford-crfm/helm#94, microsoft/kernel-memory#516",
		phrases: []string{
			"context_length_exceeded",
			"maximum context length",
			"context length exceeded",
			"reduce the length of the messages",
		},
		shapes: []shape{
			// "maximum context length is 4097 tokens. However, you requested
			// 4203 tokens (3703 in the messages, 500 in the completion)";
			// OpenRouter "you requested about 141607 tokens (10535 of text
			// input, 131072 in the output)".
			sh(`maximum context length is # tokens[.,]? however,? you requested (?:about )?# tokens \(([^)]*)\)`, "ltb"),
			// "... However, your messages resulted in 130912 tokens"; with
			// functions: "resulted in 4112 tokens (3992 in the messages,
			// 120 in the functions)".
			sh(`maximum context length is # tokens[.,]? however,? your messages resulted in # tokens`, "lu"),
			// vLLM: "you requested 4096 output tokens and your prompt
			// contains at least 4097 input tokens".
			sh(`maximum context length is # tokens[.,]? however,? you requested # output tokens and your prompt contains (?:at least )?# input tokens`, "lou"),
			// vLLM: "However, your request has 9000 input tokens."
			sh(`maximum context length is # tokens[.,]? however,? your request has # input tokens`, "lu"),
			// vLLM: "'max_tokens' or 'max_completion_tokens' is too large:
			// 2000. This model's maximum context length is 4096 tokens and
			// your request has 2104 input tokens".
			sh(`too large: #\.? .{0,40}maximum context length is # tokens and your request has # input tokens`, "olu"),
			// Without a breakdown: "you requested 9850 tokens".
			sh(`maximum context length is # tokens[.,]? however,? you requested (?:about )?# tokens`, "lt"),
		},
	},
	{
		provider: "vLLM 0.16 and later",
		source:   "harbor-framework/harbor#996",
		phrases:  []string{"resulting in a maximum input length"},
		shapes: []shape{
			// "You passed 1015 input tokens and requested 10 output
			// tokens. However, the model's context length is only 1024
			// tokens, resulting in a maximum input length of 1014 tokens."
			sh(`you passed # input tokens and requested # output tokens\.? however,? the model.{0,2}s context length is only # tokens`, "uol"),
		},
	},
	{
		provider: "OpenAI Responses API",
		source:   "anomalyco/opencode#6071",
		phrases:  []string{"exceeds the context window"},
	},
	{
		provider: "OpenAI (GPT-5 family), Azure OpenAI: configured input limit",
		source:   "cline/cline#5474, BerriAI/litellm#15968",
		phrases:  []string{"exceed the configured limit"},
		shapes: []shape{
			sh(`exceed the configured limit of # tokens\.? your messages resulted in # tokens`, "lu"),
		},
	},
	{
		provider: "Anthropic, and Claude on AWS Bedrock and Google Vertex AI",
		source:   "boldsoftware/exe.dev#62, stackblitz/bolt.new#7422, aaif-goose/goose#7504, anthropics/claude-code#2569",
		phrases: []string{
			"prompt is too long",
			"exceed context limit",
		},
		shapes: []shape{
			// "prompt is too long: 208310 tokens > 200000 maximum"
			sh(`prompt is too long: # tokens > # maximum`, "ul"),
			// "input length and max_tokens exceed context limit: 197000 +
			// 16384 > 200000"
			sh(`exceed context limit: # \+ # > #`, "uol"),
		},
	},
	{
		provider: "Google Gemini API and Vertex AI (Gemini models)",
		source:   "google-gemini/gemini-cli#4118, google-gemini/gemini-cli#19727, warpdotdev/warp#15662",
		phrases: []string{
			"exceeds the maximum number of tokens",
			"but model only supports up to",
		},
		shapes: []shape{
			// "The input token count (1200293) exceeds the maximum number
			// of tokens allowed (1048576)."
			sh(`input token count \(#\) exceeds the maximum number of tokens allowed \(#\)`, "ul"),
			// Vertex AI: "Unable to submit request because the input token
			// count is 1251952 but model only supports up to 1048576."
			sh(`input token count is # but model only supports up to #`, "ul"),
			// Without the count, with or without parentheses; an opening
			// parenthesis must be closed, so that a body cut inside the
			// number ("allowed (131") is not read as a limit of 131.
			sh(`exceeds the maximum number of tokens allowed (?:\(#\)|#)`, "ll"),
		},
	},
	{
		provider: "AWS Bedrock (Converse and InvokeModel): Claude, Llama 4 and other families without numbers",
		source:   "aws-samples/bedrock-chat#95, continuedev/continue#9592, NousResearch/hermes-agent#98726, open-webui/open-webui#11620",
		phrases: []string{
			"input is too long",
			"too many total text bytes",
		},
	},
	{
		provider: "AWS Bedrock: Meta Llama (Llama 3.x; Llama 4 at modest overshoot)",
		source:   "pkdone/paul-genai-test-tools-ts src/llm/providers/bedrock/bedrock-error-patterns.ts; a public fixture of live-captured Bedrock errors (find_string \"Provider error signatures captured from live over-limit requests\")",
		phrases:  []string{"maximum context length", "reduce the length of the prompt"},
		shapes: []shape{
			// "This model's maximum context length is 131072 tokens. Please
			// reduce the length of the prompt"
			sh(`maximum context length is # tokens`, "l"),
		},
	},
	{
		provider: "AWS Bedrock: Amazon Titan",
		source:   "aws-samples/amazon-bedrock-workshop#136",
		phrases:  []string{"too many input tokens"},
		shapes: []shape{
			// "Too many input tokens. Max input tokens: 8192, request input
			// token count: 9875"
			sh(`max input tokens: #, request input token count: #`, "lu"),
		},
	},
	{
		provider: "AWS Bedrock: Amazon Nova",
		source:   "a public fixture of live-captured Bedrock errors (find_string \"Provider error signatures captured from live over-limit requests\"); a public Strands agent log (find_string \"Input Tokens Exceeded: Number of input tokens\")",
		phrases:  []string{"number of input tokens exceeds maximum length"},
	},
	{
		provider: "AWS Bedrock Mantle (OpenAI models on Bedrock)",
		source:   "BerriAI/litellm#37862",
		phrases:  []string{"exceed model maximum"},
		shapes: []shape{
			// "prompt tokens (400007) exceed model maximum (278528) for
			// openai.gpt-5.5"
			sh(`prompt tokens \(#\) exceed model maximum \(#\)`, "ul"),
		},
	},
	{
		provider: "Mistral",
		source:   "public code quoting a mistralai SDKError (find_string \"draft tokens, too large for model\")",
		phrases:  []string{"too large for model with"},
		shapes: []shape{
			// "Prompt contains 40687 tokens and 0 draft tokens, too large
			// for model with 32768 maximum context length"
			sh(`prompt contains # tokens and # draft tokens, too large for model with # maximum context length`, "uul"),
		},
	},
	{
		provider: "xAI",
		source:   "cline/cline#3120",
		phrases:  []string{"maximum prompt length"},
		shapes: []shape{
			// "This model's maximum prompt length is 131072 but the request
			// contains 136973 tokens."
			sh(`maximum prompt length is #(?: tokens)?[.,]? but the request contains # tokens`, "lu"),
		},
	},
	{
		provider: "Cerebras",
		source:   "cline/cline#5140, anomalyco/opencode#1551",
		phrases:  []string{"reduce the length of the messages"},
		shapes: []shape{
			// "Please reduce the length of the messages or completion.
			// Current length is 42328 while limit is 40000"
			sh(`current length is # while limit is #`, "ul"),
		},
	},
	{
		provider: "Cohere",
		source:   "https://docs.cohere.com/reference/errors (400, \"too many tokens\"), cohere-ai/sandbox-topically#4, vals-ai/model-library tests/unit (find_string \"size limit exceeded by\")",
		phrases: []string{
			"total number of tokens in the prompt cannot exceed",
			"total number of tokens (prompt and prediction) cannot exceed",
			"size limit exceeded by",
			"minimal context could not be added to prompt",
			"multi-hop prompt is too long",
		},
		shapes: []shape{
			// "too many tokens: total number of tokens in the prompt cannot
			// exceed 4081 - received 4292."
			sh(`total number of tokens in the prompt cannot exceed # - received #`, "lu"),
			// Older: "total number of tokens (prompt and prediction) cannot
			// exceed 2048 - received 6354."
			sh(`total number of tokens \(prompt and prediction\) cannot exceed # - received #`, "lu"),
			// "too many tokens: size limit exceeded by 713295 tokens. Try
			// using shorter or fewer inputs. The limit for this model is
			// 288000 tokens."
			sh(`size limit exceeded by # tokens\..{0,80}?the limit for this model is # tokens`, "el"),
		},
	},
	{
		provider: "Fireworks AI",
		source:   "warpdotdev/warp#15402, fw-ai/cookbook#134",
		phrases:  []string{"prompt is too long", "maximum context length"},
		shapes: []shape{
			// "The prompt is too long: 264613, model maximum context
			// length: 262141"
			sh(`prompt is too long: #, model maximum context length: #`, "ul"),
		},
	},
	{
		provider: "Together AI",
		source:   "BerriAI/litellm#4934 (the TGI shape below); public overflow tests naming Together (find_string \"is longer than the model's context length\")",
		phrases:  []string{"is longer than the model's context length"},
		shapes: []shape{
			// "The input (516368 tokens) is longer than the model's context
			// length (262144 tokens)."
			sh(`input \(# tokens\) is longer than the model.{0,2} context length \(# tokens\)`, "ul"),
		},
	},
	{
		provider: "SambaNova",
		source:   "OpenHands/OpenHands#9252",
		phrases:  []string{"maximum context length", "answering your request will take"},
		shapes: []shape{
			// "The maximum context length of DeepSeek-V3-0324 is 32768.
			// However, answering your request will take 39732 tokens."
			sh(`maximum context length of .{1,80}? is #(?: tokens)?[.,]? however,? answering your request will take # tokens`, "lt"),
		},
	},
	{
		provider: "Perplexity",
		source:   "a recorded Perplexity response (VCR cassette) on a stored page, https://brick-house.org/410ac3d4-d76b-4954-80da-3e944bf40718?page=6; public Perplexity bridge tests (find_string \"too_many_prompt_tokens\")",
		phrases: []string{
			"too_many_prompt_tokens",
			"total length of all messages is too long",
		},
	},
	{
		provider: "Hugging Face Text Generation Inference (also behind Together and Hugging Face Inference)",
		source:   "huggingface/chat-ui#1149, stanford-crfm/helm#2079, BerriAI/litellm#4934, meta-llama/llama#1103",
		phrases: []string{
			"tokens + max_new_tokens must be",
			"inputs must have less than",
		},
		shapes: []shape{
			// "`inputs` tokens + `max_new_tokens` must be <= 8192. Given:
			// 6204 `inputs` tokens and 2047 `max_new_tokens`"
			sh(`tokens \+ max_new_tokens must be <= #\.? given: # inputs tokens and # max_new_tokens`, "luo"),
			// "`inputs` must have less than 4096 tokens. Given: 4545"
			sh(`inputs must have less than # tokens\.? given: #`, "lu"),
		},
	},
	{
		provider: "llama.cpp server",
		source:   "oobabooga/textgen#7257, ggml-org/llama.cpp#19774, continuedev/continue#12735",
		phrases: []string{
			"exceed_context_size_error",
			"exceeds the available context size",
			"context size has been exceeded",
		},
		shapes: []shape{
			// "request (4390 tokens) exceeds the available context size
			// (4096 tokens)"
			sh(`request \(# tokens\) exceeds the available context size \(# tokens\)`, "ul"),
			// JSON fields: "n_prompt_tokens":14429,"n_ctx":8192
			sh(`n_prompt_tokens\W{1,6}#.{0,200}?n_ctx\W{1,6}#`, "ul"),
			sh(`n_ctx\W{1,6}#.{0,200}?n_prompt_tokens\W{1,6}#`, "lu"),
		},
	},
	{
		provider: "Ollama",
		source:   "nano-step/nano-brain#208",
		phrases:  []string{"input length exceeds the context length"},
	},
	{
		provider: "LM Studio",
		source:   "lmstudio-ai/examples#29, lmstudio-ai/lmstudio-bug-tracker#546, Gitlawb/openclaude#353, anomalyco/opencode#11141, NousResearch/hermes-agent#348",
		phrases: []string{
			"exceeds context length",
			"tokens when context the overflows",
			"number of tokens to keep from the initial prompt is greater than the context length",
			"cannot truncate prompt with n_keep",
			"context size has been exceeded",
		},
		shapes: []shape{
			// "Input length 6491 exceeds context length 1500"
			sh(`input length # exceeds context length #`, "ul"),
			// "Trying to keep the first 111490 tokens when context the
			// overflows. However, the model is loaded with context length
			// of only 32768 tokens"
			sh(`keep the first # tokens when context the overflows\. however, the model is loaded with context length of only # tokens`, "ul"),
			// "(n_keep: 13055>= n_ctx: 4096)"; "n_keep (15028) >= n_ctx
			// (7424)"
			sh(`n_keep\W{1,3}#\)? ?>= ?n_ctx\W{1,3}#`, "ul"),
		},
	},
	{
		provider: "GitHub Copilot API",
		source:   "jjleng/copilot-more#35",
		phrases:  []string{"prompt token count of"},
		shapes: []shape{
			// "prompt token count of 93854 exceeds the limit of 90000"
			sh(`prompt token count of # exceeds the limit of #`, "ul"),
		},
	},
	{
		provider: "Zhipu",
		source:   "REFERENCES.md (matched by the reference runtime); body from public test code (find_string \"Prompt exceeds max length\")",
		phrases:  []string{"prompt exceeds max length"},
	},
	{
		provider: "LiteLLM (exception name wrapped around a provider error)",
		source:   "BerriAI/litellm#10431",
		phrases:  []string{"ContextWindowExceededError"},
	},
}

// notOverflowRows are the errors that are not overflows.
var notOverflowRows = []notOverflowRow{
	{
		what:   "rate limits and per-minute or per-day token limits (OpenAI, Groq, Anthropic, Gemini)",
		source: "FoundationAgents/MetaGPT#523, TheR1D/shell_gpt#653, stagewise-io/stagewise#927",
		phrases: []string{
			"rate limit", "ratelimit", "RateLimitError", "too many requests",
			"tokens per min", "tokens per minute", "requests per min", "requests per minute",
			"tokens per day", "requests per day",
		},
	},
	{
		what:    "quota and billing",
		source:  "ChatGPTNextWeb/NextChat#3123, can1357/oh-my-pi#9569",
		phrases: []string{"quota", "resource_exhausted", "resource has been exhausted", "billing", "more credits", "ServiceQuotaExceededException"},
	},
	{
		what:    "AWS Bedrock throttling (\"Too many tokens, please wait before trying again.\")",
		source:  "cline/cline#6611",
		phrases: []string{"ThrottlingException", "please wait before trying again"},
	},
	{
		what:   "requests for more output than the model gives",
		source: "diffbot/code-gpt-docs#284, ChatGPTNextWeb/NextChat#4964, vercel/ai#2772, https://docs.cohere.com/reference/errors, DaviRain-Su/hyper-grok-build#44",
		phrases: []string{
			"completion tokens, whereas you provided",          // OpenAI
			"maximum allowed number of output tokens",          // Anthropic
			"maximum tokens you requested exceeds",             // Bedrock
			"cannot be greater than max_model_len",             // vLLM
			"the maximum output for this model",                // Cohere
			"exceeds model's maximum output tokens",            // Ollama Cloud
			"max_tokens must be less than or equal to",         // Cohere, Groq
			"max_completion_tokens must be less than or equal", // Groq
		},
	},
}
