package history

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// overflowCase is one real provider error. Every message below was copied
// from a public source, named in the source field: a GitHub issue or pull
// request (owner/repo#N), a file in a public repository, or, where the only
// copy found was a snippet in public code whose repository the index did not
// name, the exact string that finds it. Only secrets were shortened.
type overflowCase struct {
	name   string
	source string
	msg    string
	want   bool
	used   int
	limit  int
}

var overflowCases = []overflowCase{
	// ---- OpenAI and Azure OpenAI ----
	{
		name:   "openai chat, messages resulted in",
		source: "chathub-dev/chathub#126",
		msg:    `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		want:   true, used: 4294, limit: 4097,
	},
	{
		name:   "openai chat, breakdown with completion reservation",
		source: "mckaywrigley/chatbot-ui#102",
		msg: `OpenAI API returned an error. responseStatusText: "Bad Request", responseStatusCode: "400", responseMessage: "{
  "error": {
    "message": "This model's maximum context length is 4097 tokens. However, you requested 4120 tokens (3120 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded"
  }
}"`,
		want: true, used: 3120, limit: 3097,
	},
	{
		name:   "openai chat, functions count as input",
		source: "FoundationAgents/OpenManus#62 (comment)",
		msg:    `API error: Error code: 400 - {'error': {'message': "This model's maximum context length is 8192 tokens. However, you requested 8213 tokens (6683 in the messages, 730 in the functions, and 800 in the completion). Please reduce the length of the messages, functions, or completion.", 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}`,
		want:   true, used: 7413, limit: 7392,
	},
	{
		name:   "openai completions (legacy), comma breakdown",
		source: "stanford-crfm/helm#94",
		msg:    `OpenAI error: This model's maximum context length is 2049 tokens, however you requested 2054 tokens (2049 in your prompt, 5 for the completion). Please reduce your prompt or completion length.`,
		want:   true, used: 2049, limit: 2044,
	},
	{
		name:   "openai completions (legacy), semicolon breakdown",
		source: "nicknochnack/LangchainDocuments#2",
		msg:    `InvalidRequestError: This model's maximum context length is 4097 tokens, however you requested 4322 tokens (4066 in your prompt; 256 for the completion). Please reduce your prompt; or completion length.`,
		want:   true, used: 4066, limit: 3841,
	},
	{
		name:   "openai responses api, no numbers",
		source: "anomalyco/opencode#6071",
		msg:    `{"type":"error","sequence_number":2,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`,
		want:   true,
	},
	{
		name:   "openai gpt-5 configured input limit",
		source: "cline/cline#5474",
		msg:    `400 Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 289650 tokens. Please reduce the length of the messages.`,
		want:   true, used: 289650, limit: 272000,
	},
	{
		name:   "azure openai configured input limit",
		source: "BerriAI/litellm#15968",
		msg:    `AzureException BadRequestError - Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 509178 tokens. Please reduce the length of the messages.`,
		want:   true, used: 509178, limit: 272000,
	},
	{
		name:   "azure openai .NET SDK",
		source: "microsoft/kernel-memory#516",
		msg:    `Azure.RequestFailedException: This model's maximum context length is 8192 tokens. However, your messages resulted in 10383 tokens. Please reduce the length of the messages. Status: 400 (model_error) ErrorCode: context_length_exceeded`,
		want:   true, used: 10383, limit: 8192,
	},
	{
		name:   "azure openai, history plus reply over a 32k window",
		source: "Azure/azure-sdk-for-net#41892",
		msg:    `This model's maximum context length is 32768 tokens. However, you requested 35969 tokens (9969 in the messages, 26000 in the completion). Please reduce the length of the messages or completion.`,
		want:   true, used: 9969, limit: 6768,
	},

	// ---- Anthropic and Bedrock ----
	{
		name:   "anthropic prompt is too long",
		source: "boldsoftware/exe.dev#62",
		msg:    `LLM request failed: status 400 Bad Request (url=http://169.254.169.254/gateway/llm/_/gateway/anthropic/v1/messages, model=claude-opus-4-5-20251101): {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"},"request_id":"req_011CWdepJvA2D819tdYYq4h7"}`,
		want:   true, used: 200251, limit: 200000,
	},
	{
		name:   "anthropic through litellm",
		source: "entropy-research/Devon#88",
		msg:    `litellm.BadRequestError: litellm.ContextWindowExceededError: AnthropicError - {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 209353 tokens > 199999 maximum"}}`,
		want:   true, used: 209353, limit: 199999,
	},
	{
		name:   "anthropic input plus max_tokens",
		source: "stackblitz/bolt.new#7422",
		msg:    `input length and max_tokens exceed context limit: 86888 + 119866 > 204648, decrease input length or max_tokens and try again`,
		want:   true, used: 86888, limit: 84782,
	},
	{
		name:   "bedrock claude, prompt is too long",
		source: "aaif-goose/goose#7504",
		msg:    `Failed to call Bedrock: ValidationException(ValidationException { message: Some("The model returned the following errors: prompt is too long: 227255 tokens > 200000 maximum") })`,
		want:   true, used: 227255, limit: 200000,
	},
	{
		name:   "bedrock input is too long",
		source: "aws-samples/bedrock-chat#95",
		msg:    `EventStreamError: An error occurred (validationException) when calling the InvokeModelWithResponseStream operation: Input is too long for requested model.`,
		want:   true,
	},
	{
		name:   "bedrock converse stream",
		source: "continuedev/continue#6005",
		msg:    `Error processing Bedrock stream: The model returned the following errors: Input is too long for requested model.`,
		want:   true,
	},
	{
		name:   "bedrock too many input tokens",
		source: `public code, a Bedrock error-pattern table (find_string "request input token count")`,
		msg:    `ValidationException: 400 Bad Request: Too many input tokens. Max input tokens: 8192, request input token count: 9279`,
		want:   true, used: 9279, limit: 8192,
	},

	// ---- Google Gemini ----
	{
		name:   "gemini input token count",
		source: "google-gemini/gemini-cli#4118",
		msg:    `[API Error: got status: INVALID_ARGUMENT. {"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}]`,
		want:   true, used: 132478, limit: 131072,
	},
	{
		name:   "gemini python genai ClientError",
		source: "google-gemini/gemini-cli#27197",
		msg:    `google.genai.errors.ClientError: 400 INVALID_ARGUMENT. {'error': {'code': 400, 'message': 'The input token count (81881) exceeds the maximum number of tokens allowed (65536).', 'status': 'INVALID_ARGUMENT'}}`,
		want:   true, used: 81881, limit: 65536,
	},
	{
		name:   "gemini without the count",
		source: "arkavo-org/arkavo-edge#371",
		msg: `Provider error: Gemini streaming error: API error: HTTP 400 Bad Request: {
  "error": {
    "code": 400,
    "message": "The input token count exceeds the maximum number of tokens allowed (1048576).",
    "status": "INVALID_ARGUMENT"
  }
}`,
		want: true, limit: 1048576,
	},

	// ---- Groq, Cerebras, Mistral, DeepSeek, xAI, Zhipu ----
	{
		name:   "groq context_length_exceeded",
		source: "OpenHands/OpenHands#1902",
		msg:    `Error while running the agent: GroqException - Error code: 400 - {'error': {'message': 'Please reduce the length of the messages or completion.', 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}`,
		want:   true,
	},
	{
		name:   "cerebras current length",
		source: "cline/cline#5140",
		msg:    `400 Please reduce the length of the messages or completion. Current length is 42328 while limit is 40000`,
		want:   true, used: 42328, limit: 40000,
	},
	{
		name:   "mistral draft tokens",
		source: `public code quoting a mistralai SDKError (find_string "draft tokens, too large for model")`,
		msg:    `mistralai.client.errors.sdkerror.SDKError: API error occurred: Status 400. Body: {"object":"error","message":"Prompt contains 159202 tokens and 0 draft tokens, too large for model with 131072 maximum context length","type":"invalid_request_invalid_args","param":null,"code":"3051","raw_status_code":400}`,
		want:   true, used: 159202, limit: 131072,
	},
	{
		name:   "deepseek with completion reservation",
		source: "FoundationAgents/OpenManus#79",
		msg:    `API error: Error code: 400 - {'error': {'message': "This model's maximum context length is 65536 tokens. However, you requested 66343 tokens (62247 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.", 'type': 'invalid_request_error', 'param': None, 'code': 'invalid_request_error'}}`,
		want:   true, used: 62247, limit: 61440,
	},
	{
		name:   "deepseek through litellm, zero completion",
		source: "BerriAI/litellm#10431",
		msg:    `litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: DeepseekException - {"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 68161 tokens (68161 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`,
		want:   true, used: 68161, limit: 65536,
	},
	{
		name:   "deepseek re-wrapped by a log",
		source: "evalstate/fast-agent#621",
		msg: `Error details: deepseek request failed for model 'deepseek-chat' (code:

invalid_request_error) (status=400): Error code: 400 - {'error': {'message':

"This model's maximum context length is 131072 tokens. However, you requested

131134 tokens (122942 in the messages, 8192 in the completion). Please reduce

the length of the messages or completion.", 'type': 'invalid_request_error',

'param': None, 'code': 'invalid_request_error'}}`,
		want: true, used: 122942, limit: 122880,
	},
	{
		name:   "xai maximum prompt length",
		source: "cline/cline#3120",
		msg:    `400 "This model's maximum prompt length is 131072 but the request contains 136973 tokens."`,
		want:   true, used: 136973, limit: 131072,
	},
	{
		name:   "zhipu prompt exceeds max length",
		source: "REFERENCES.md (matched by the reference runtime); body from public test code (find_string \"Prompt exceeds max length\")",
		msg:    `{"error":{"code":"1261","message":"Prompt exceeds max length"}}`,
		want:   true,
	},

	// ---- OpenRouter ----
	{
		name:   "openrouter about N tokens of text input",
		source: "refly-ai/refly#1177",
		msg:    `Full error stack: Error: 400 This endpoint's maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 of text input). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.`,
		want:   true, used: 42832, limit: 32768,
	},
	{
		name:   "openrouter legacy prompt breakdown",
		source: "OpenRouterTeam/openrouter-examples#10",
		msg:    `openai.BadRequestError: Error code: 400 - {'error': {'message': "This model's maximum context length is 8192 tokens, however you requested 8977 tokens (8977 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.", 'type': 'invalid_request_error', 'param': None, 'code': None}}`,
		want:   true, used: 8977, limit: 8192,
	},

	// ---- Self-hosted: vLLM, llama.cpp, Ollama, LM Studio, TGI ----
	{
		name:   "vllm messages and completion",
		source: "ruipeterpan/specreason#4",
		msg:    `ERROR 05-08 21:27:27 [serving_chat.py:198] ValueError: This model's maximum context length is 8192 tokens. However, you requested 8203 tokens (7691 in the messages, 512 in the completion). Please reduce the length of the messages or completion.`,
		want:   true, used: 7691, limit: 7680,
	},
	{
		name:   "vllm no max_tokens",
		source: "vllm-project/vllm vllm/entrypoints/openai/serving_engine.py (0030b9ff)",
		msg:    `This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages, Please reduce the length of the messages.`,
		want:   true, used: 5000, limit: 4096,
	},
	{
		name:   "vllm prompt contains at least",
		source: "hotovo/aider-desk#919",
		msg:    `{"error":{"message":"This model's maximum context length is 262144 tokens. However, you requested 0 output tokens and your prompt contains at least 262145 input tokens, for a total of at least 262145 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=262145)","type":"BadRequestError","param":"input_tokens","code":400}}`,
		want:   true, used: 262145, limit: 262144,
	},
	{
		name:   "vllm max_tokens too large but the input could shrink",
		source: "canfieldjuan/finetunelab.ai docs/MAX_TOKENS_CONTEXT_OVERFLOW_FIX.md",
		msg:    `'max_tokens' or 'max_completion_tokens' is too large: 2000. This model's maximum context length is 4096 tokens and your request has 2104 input tokens (2000 > 4096 - 2104).`,
		want:   true, used: 2104, limit: 2096,
	},
	{
		name:   "llama.cpp server with JSON counts",
		source: "oobabooga/textgen#7257",
		msg:    `{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}`,
		want:   true, used: 14429, limit: 8192,
	},
	{
		name:   "llama.cpp server with counts in the message",
		source: "ggml-org/llama.cpp#19774",
		msg:    `{"error":{"code":400,"message":"request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error"}}`,
		want:   true, used: 4390, limit: 4096,
	},
	{
		name:   "llama.cpp server 500 variant",
		source: "ggml-org/llama.cpp#19774",
		msg:    `{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}`,
		want:   true,
	},
	{
		name:   "ollama",
		source: "nano-step/nano-brain#208",
		msg:    `ollama: unexpected status 400: {"error":"the input length exceeds the context length"}`,
		want:   true,
	},
	{
		name:   "lm studio",
		source: "lmstudio-ai/examples#29",
		msg:    `[ERROR] Error: Input length 6491 exceeds context length 1500`,
		want:   true, used: 6491, limit: 1500,
	},
	{
		name:   "hugging face tgi (numbers elided in the report)",
		source: "barun-saha/slide-deck-ai#44",
		msg:    "huggingface_hub.errors.ValidationError: Input validation error: `inputs` tokens + `max_new_tokens` must be <= 32768. Given: X `inputs` tokens and Y `max_new_tokens`",
		want:   true,
	},

	// ---- Not overflows: rate and per-minute limits ----
	{
		name:   "openai tpm rate limit",
		source: "FoundationAgents/MetaGPT#523",
		msg:    `openai.error.RateLimitError: Rate limit reached for gpt-4 in organization org-uVqpjtJiKqvVJMVfvpaounIh on tokens per min (TPM): Limit 10000, Used 8554, Requested 3082. Please try again in 9.816s. Visit https://platform.openai.com/account/rate-limits to learn more.`,
	},
	{
		name:   "openai request larger than the tpm limit",
		source: "TheR1D/shell_gpt#653",
		msg:    `RateLimitError: Error code: 429 - {'error': {'message': 'Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.', 'type': 'tokens', 'param': None, 'code': 'rate_limit_exceeded'}}`,
	},
	{
		name:   "groq request larger than the tpm limit (413)",
		source: `public test code capturing a Groq body (find_string "on tokens per minute (TPM): Limit")`,
		msg:    "{\"error\":{\"message\":\"Request too large for model `llama-3.1-8b-instant` in organization `org_01jy16rk1yffks8jdsmfn4s7rj` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 15041, please reduce your message size and try again. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing\",\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\"}}",
	},
	{
		name:   "anthropic input tokens per minute",
		source: "stagewise-io/stagewise#927",
		msg:    `LLM provider error: Failed after 2 attempts. Last error: This request would exceed your organization's rate limit of 30,000 input tokens per minute (org: 80162711-722b-4454-ae75-c6334e6796f2, model: claude-opus-4-6). For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.`,
	},

	// ---- Not overflows: quota, billing, auth ----
	{
		name:   "openai insufficient quota",
		source: "ChatGPTNextWeb/NextChat#3123",
		msg:    `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
	},
	{
		name:   "openrouter credits",
		source: "can1357/oh-my-pi#9569",
		msg:    `402 This request requires more credits, or fewer max_tokens. You requested up to 65536 tokens, but can only afford 12000.`,
	},
	{
		name:   "openai auth",
		source: "chatanywhere/GPT_API_free#62",
		msg:    `Server Error: Request failed with status code 401 and body {"error":{"message":"Incorrect API key provided: sk-VKMIs***wjh3. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
	},
	{
		name:   "anthropic auth",
		source: "cline/cline#12",
		msg:    `API request failed: 401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
	},

	// ---- Not overflows: output-size errors ----
	{
		name:   "openai max_tokens above the output cap",
		source: "diffbot/code-gpt-docs#284",
		msg:    `400 max_tokens is too large: 6000. This model supports at most 4096 completion tokens, whereas you provided 6000.`,
	},
	{
		name:   "anthropic max_tokens above the output cap",
		source: "ChatGPTNextWeb/NextChat#4964",
		msg:    `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens for claude-3-5-sonnet-20240620"}}`,
	},
	{
		name:   "bedrock max tokens above the model limit",
		source: "vercel/ai#2772",
		msg:    `ValidationException: The maximum tokens you requested exceeds the model limit of 4096. Try again with a maximum tokens value that is lower than 4096.`,
	},
	{
		name:   "openai completion alone fills the window (code says context_length_exceeded)",
		source: "ChatGPTNextWeb/NextChat#3195",
		msg:    `{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 8256 tokens (64 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
	},
	{
		name:   "azure completion alone exceeds the window",
		source: "Azure/azure-sdk-for-python#40986",
		msg:    `(context_length_exceeded) This model's maximum context length is 128000 tokens. However, you requested 1124171 tokens (124171 in the messages, 1000000 in the completion). Please reduce the length of the messages or completion.`,
	},
	{
		name:   "vllm max_tokens larger than the window",
		source: "andrewcho-dev/opsconductor-ng vLLM_transition/TOKEN_LIMIT_FIX.md",
		msg:    `vLLM HTTP error: 400 - {"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None","type":"BadRequestError","param":null,"code":400}}`,
	},
	{
		name:   "openrouter output reservation equals the window",
		source: "Aider-AI/aider#3721",
		msg:    `litellm.BadRequestError: OpenrouterException - KeyError: 'choices', Got unexpected response from OpenRouter: {'error': {'message': 'This endpoint\'s maximum context length is 131072 tokens. However, you requested about 141607 tokens (10535 of text input, 131072 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.', 'code': 400, 'metadata': {'provider_name': 'Chutes'}}}`,
	},

	// ---- Not overflows: unrelated ----
	{name: "empty", source: "edge case", msg: ""},
	{name: "server error", source: "edge case", msg: `500 Internal Server Error`},
}

func TestParseOverflow(t *testing.T) {
	for _, tc := range overflowCases {
		t.Run(tc.name, func(t *testing.T) {
			err := errors.New(tc.msg)
			ov, ok := ParseOverflow(err)
			if ok != tc.want {
				t.Fatalf("ParseOverflow ok = %v, want %v (source %s)\nmessage: %s", ok, tc.want, tc.source, tc.msg)
			}
			if got := IsContextOverflow(err); got != tc.want {
				t.Errorf("IsContextOverflow = %v, want %v", got, tc.want)
			}
			if ov.Used != tc.used || ov.Limit != tc.limit {
				t.Errorf("ParseOverflow = %+v, want {Used:%d Limit:%d} (source %s)", ov, tc.used, tc.limit, tc.source)
			}
			// The same error wrapped twice, as an SDK error inside a runtime
			// error, reads the same.
			wrapped := fmt.Errorf("agent turn 7: %w", fmt.Errorf("provider call: %w", err))
			if ov2, ok2 := ParseOverflow(wrapped); ok2 != ok || ov2 != ov {
				t.Errorf("wrapped: ParseOverflow = %+v, %v; want %+v, %v", ov2, ok2, ov, ok)
			}
		})
	}
}

func TestParseOverflowNil(t *testing.T) {
	if ov, ok := ParseOverflow(nil); ok || ov != (Overflow{}) {
		t.Fatalf("ParseOverflow(nil) = %+v, %v", ov, ok)
	}
	if IsContextOverflow(nil) {
		t.Fatal("IsContextOverflow(nil) = true")
	}
}

// opaqueWrap hides the wrapped error's text: only Unwrap reaches it.
type opaqueWrap struct{ err error }

func (w opaqueWrap) Error() string { return "request failed" }
func (w opaqueWrap) Unwrap() error { return w.err }

// statusErr mimics SDK errors that expose the HTTP status as a method.
type statusErr struct {
	status int
	msg    string
}

func (e statusErr) Error() string   { return e.msg }
func (e statusErr) StatusCode() int { return e.status }

// smithyErr mimics an AWS smithy API error (Bedrock ValidationException):
// Error() is generic, the message is behind ErrorMessage().
type smithyErr struct{ code, msg string }

func (e smithyErr) Error() string        { return "operation error Bedrock Runtime: Converse, api error" }
func (e smithyErr) ErrorCode() string    { return e.code }
func (e smithyErr) ErrorMessage() string { return e.msg }
func (e smithyErr) HTTPStatusCode() int  { return 400 }

func TestParseOverflowErrorTree(t *testing.T) {
	anthropic := errors.New(`prompt is too long: 208310 tokens > 200000 maximum`)
	tests := []struct {
		name   string
		err    error
		want   bool
		ov     Overflow
		reason string
	}{
		{
			name: "text only behind Unwrap", err: opaqueWrap{anthropic},
			want: true, ov: Overflow{Used: 208310, Limit: 200000},
			reason: "a wrapper that does not repeat the inner text must not hide the overflow",
		},
		{
			name: "errors.Join", err: errors.Join(errors.New("retry 1 failed"), anthropic),
			want: true, ov: Overflow{Used: 208310, Limit: 200000},
			reason: "Unwrap() []error branches are walked",
		},
		{
			name: "typed message only", err: smithyErr{"ValidationException", "Input is too long for requested model."},
			want:   true,
			reason: "ErrorMessage() is read when Error() does not carry it",
		},
		{
			name: "typed code only", err: smithyErr{"context_length_exceeded", "bad request"},
			want:   true,
			reason: "an error code of context_length_exceeded is enough",
		},
		{
			name: "429 status vetoes overflow text", err: statusErr{429, "This model's maximum context length is 8192 tokens. However, you requested 9850 tokens"},
			want:   false,
			reason: "a rate-limit status is never an overflow, whatever the text says",
		},
		{
			name: "400 status keeps overflow", err: statusErr{400, "This model's maximum context length is 8192 tokens. However, you requested 9850 tokens"},
			want: true, ov: Overflow{Used: 9850, Limit: 8192},
			reason: "a 400 carries overflows",
		},
		{
			name: "rate limit anywhere in the tree vetoes", err: errors.Join(anthropic, errors.New("429 Rate limit reached for requests")),
			want:   false,
			reason: "a tree that also reports a rate limit is not retried as an overflow",
		},
		{
			name: "thousands separators", err: errors.New("prompt is too long: 1,520,294 tokens > 1,000,000 maximum"),
			want: true, ov: Overflow{Used: 1520294, Limit: 1000000},
			reason: "counts written with separators parse",
		},
		{
			name: "absurd numbers read as not stated", err: errors.New("prompt is too long: 99999999999999999999999 tokens > 200000 maximum"),
			want: true, ov: Overflow{Used: 0, Limit: 200000},
			reason: "an unparsable count is 0, never negative or wrapped",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ov, ok := ParseOverflow(tc.err)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (%s)", ov, ok, tc.ov, tc.want, tc.reason)
			}
		})
	}
}

// cyclic unwraps to itself forever.
type cyclic struct{}

func (c *cyclic) Error() string { return "loop" }
func (c *cyclic) Unwrap() error { return c }

func TestParseOverflowCyclicChain(t *testing.T) {
	if IsContextOverflow(&cyclic{}) {
		t.Fatal("cyclic error classified as overflow")
	}
}

func FuzzParseOverflow(f *testing.F) {
	for _, tc := range overflowCases {
		f.Add(tc.msg)
	}
	f.Add("maximum context length is 5 tokens. however, you requested 9 tokens (99999999999999999999 in the messages, 3 in the completion)")
	f.Fuzz(func(t *testing.T, s string) {
		err := errors.New(s)
		ov, ok := ParseOverflow(err)
		if ov.Used < 0 || ov.Limit < 0 {
			t.Fatalf("negative sizes %+v for %q", ov, s)
		}
		if !ok && ov != (Overflow{}) {
			t.Fatalf("not an overflow but sizes %+v for %q", ov, s)
		}
		if IsContextOverflow(err) != ok {
			t.Fatalf("IsContextOverflow disagrees with ParseOverflow for %q", s)
		}
		if ov2, ok2 := ParseOverflow(fmt.Errorf("wrapped: %w", err)); ok2 != ok || ov2 != ov {
			t.Fatalf("wrapping changed the result for %q: %+v,%v vs %+v,%v", s, ov2, ok2, ov, ok)
		}
	})
}

// toolHistory returns a system message and n turns of four messages each
// (user, assistant calling a tool, tool result, assistant), 40 tokens a turn
// under the unit counter.
func toolHistory(n int) []Message {
	msgs := []Message{{Role: RoleSystem, Content: "be brief"}}
	for i := range n {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs,
			Message{Role: RoleUser, Content: "question " + strconv.Itoa(i)},
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "search", Arguments: `{"q":"x"}`}}},
			Message{Role: RoleTool, ToolCallID: id, Content: "result " + strconv.Itoa(i)},
			Message{Role: RoleAssistant, Content: "answer " + strconv.Itoa(i)},
		)
	}
	return msgs
}

func TestRecoverOverflow(t *testing.T) {
	const (
		anthropic2x = "prompt is too long: 2000 tokens > 1000 maximum"          // Used/Limit = 2
		groq        = "Please reduce the length of the messages or completion." // no numbers
		geminiLimit = "The input token count exceeds the maximum number of tokens allowed (150)."
	)
	// 10 turns of 40 tokens + a 10-token system message = 410 tokens; with
	// the 10-token breadcrumb the fixed part of a trimmed history is 20.
	tests := []struct {
		name      string
		err       string
		attempt   int
		budget    int // expected target
		keptTurns int
		reason    string
	}{
		{"stated sizes, attempt 1", anthropic2x, 1, 184, 4, "410 × 1000/2000 × 0.90"},
		{"stated sizes, attempt 2", anthropic2x, 2, 153, 3, "410 × 1000/2000 × 0.75"},
		{"stated sizes, attempt 3", anthropic2x, 3, 76, 1, "410 × 1000/2000 × 0.375"},
		{"no sizes, attempt 1", groq, 1, 307, 7, "410 × 0.75"},
		{"no sizes, attempt 2", groq, 2, 205, 4, "410 × 0.5"},
		{"no sizes, attempt 3", groq, 3, 102, 2, "410 × 0.25"},
		{"attempt 0 reads as 1", groq, 0, 307, 7, "attempt <= 0 is the first attempt"},
		{"attempt -5 reads as 1", groq, -5, 307, 7, "attempt <= 0 is the first attempt"},
		{"limit only", geminiLimit, 1, 135, 2, "min(410 × 0.75, 150 × 0.90)"},
		{"huge attempt", groq, 1 << 30, 1, 1, "the target never drops below 1; the latest turn stays"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := toolHistory(10)
			orig := clone(in)
			var events []Event
			res, err := RecoverOverflow(in, errors.New(tc.err), tc.attempt, WithCounter(unit),
				WithOnTrim(func(e Event) { events = append(events, e) }))
			if err != nil {
				t.Fatalf("err = %v (%s)", err, tc.reason)
			}
			if !reflect.DeepEqual(in, orig) {
				t.Fatal("input modified")
			}
			checkResult(t, in, res, true)
			if res.Budget != tc.budget || res.KeptTurns != tc.keptTurns || !res.Trimmed {
				t.Fatalf("budget %d kept %d trimmed %v; want budget %d kept %d (%s)",
					res.Budget, res.KeptTurns, res.Trimmed, tc.budget, tc.keptTurns, tc.reason)
			}
			if len(events) != 1 {
				t.Fatalf("%d events, want 1", len(events))
			}
			want := eventOf(res, ReasonOverflow, max(tc.attempt, 1))
			if !reflect.DeepEqual(stripLabels(events[0]), want) {
				t.Fatalf("event %+v, want %+v", events[0], want)
			}
		})
	}
}

func TestRecoverOverflowNotOverflow(t *testing.T) {
	in := toolHistory(3)
	orig := clone(in)
	for _, perr := range []error{
		nil,
		errors.New(`{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29937, Requested 385.","type":"tokens","code":"rate_limit_exceeded"}}`),
		errors.New("400 max_tokens is too large: 6000. This model supports at most 4096 completion tokens, whereas you provided 6000."),
	} {
		fired := false
		res, err := RecoverOverflow(in, perr, 1, WithOnTrim(func(Event) { fired = true }))
		if !errors.Is(err, ErrNotOverflow) {
			t.Fatalf("%v: err = %v, want ErrNotOverflow", perr, err)
		}
		if fired || res.Trimmed || res.Kept != nil || res.Dropped != nil {
			t.Fatalf("%v: history touched: %+v", perr, res)
		}
		if len(res.Messages) != len(in) || cap(res.Messages) != len(in) || &res.Messages[0] != &in[0] {
			t.Fatalf("%v: Messages is not the input clipped", perr)
		}
		if !reflect.DeepEqual(in, orig) {
			t.Fatal("input modified")
		}
	}
}

func TestRecoverOverflowCannotRecover(t *testing.T) {
	provider := errors.New("prompt is too long: 208310 tokens > 200000 maximum")
	for _, in := range [][]Message{
		toolHistory(1),
		{{Role: RoleSystem, Content: "only a prompt"}},
		nil,
		append([]Message{{Role: RoleSystem, Content: "s"}, Breadcrumb()}, toolHistory(1)[1:]...),
	} {
		fired := false
		res, err := RecoverOverflow(in, fmt.Errorf("call: %w", provider), 2, WithCounter(unit),
			WithOnTrim(func(Event) { fired = true }))
		if !errors.Is(err, ErrCannotRecover) || !errors.Is(err, provider) {
			t.Fatalf("err = %v, want ErrCannotRecover wrapping the provider error", err)
		}
		var re *RecoverError
		if !errors.As(err, &re) {
			t.Fatalf("err %T is not a *RecoverError", err)
		}
		if re.Used != 208310 || re.Limit != 200000 || re.Attempt != 2 || re.Tokens != res.TokensAfter || re.Budget < 1 {
			t.Fatalf("RecoverError %+v", re)
		}
		msg := err.Error()
		for _, want := range []string{"history: cannot recover", "208310 of 200000", "target " + strconv.Itoa(re.Budget), "prompt is too long"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("error %q does not mention %q", msg, want)
			}
		}
		if fired || res.Trimmed {
			t.Fatalf("nothing was dropped, yet trimmed=%v event=%v", res.Trimmed, fired)
		}
		if len(res.Messages) != len(in) {
			t.Fatalf("Result holds %d messages, want the %d left", len(res.Messages), len(in))
		}
	}
}

func TestRecoverOverflowBreadcrumbNotStacked(t *testing.T) {
	first, err := TrimToRecentTurns(toolHistory(10), 300, WithCounter(unit))
	if err != nil || !first.Trimmed {
		t.Fatalf("setup trim: %v", err)
	}
	res, err := RecoverOverflow(first.Messages, errors.New("context_length_exceeded"), 1, WithCounter(unit))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range res.Messages {
		if m.Kind == KindBreadcrumb {
			n++
		}
	}
	if n != 1 || res.Messages[1].Kind != KindBreadcrumb {
		t.Fatalf("%d breadcrumbs: %v", n, render(res.Messages))
	}
	checkResult(t, first.Messages, res, true)
}

// fakeProvider counts a history as factor × the Heuristic count (a provider
// whose tokenizer disagrees with ours) and rejects it above limit with an
// Anthropic-shaped error, or with a size-less error when quiet is set.
type fakeProvider struct {
	factor float64
	limit  int
	quiet  bool
}

func (p fakeProvider) send(msgs []Message) error {
	n := int(float64(Estimate(msgs, Heuristic())) * p.factor)
	if n <= p.limit {
		return nil
	}
	if p.quiet {
		return errors.New(`{"error":{"message":"Your input exceeds the context window of this model.","code":"context_length_exceeded"}}`)
	}
	return fmt.Errorf("anthropic: status 400: prompt is too long: %d tokens > %d maximum", n, p.limit)
}

// TestRecoverOverflowTerminates drives the retry loop against providers that
// reject more than the library expects, including one that rejects
// everything. It must end, either accepted or with ErrCannotRecover, within a
// bounded number of attempts, dropping turns on every attempt.
func TestRecoverOverflowTerminates(t *testing.T) {
	big := toolHistory(200)
	est := Estimate(big, Heuristic())
	tests := []struct {
		name        string
		p           fakeProvider
		maxAttempts int
		accepted    bool
	}{
		{"sizes stated, provider counts 30% more", fakeProvider{factor: 1.3, limit: est / 2}, 1, true},
		{"sizes stated, provider counts 3x more", fakeProvider{factor: 3, limit: est / 2}, 1, true},
		{"no sizes, provider counts 30% more", fakeProvider{factor: 1.3, limit: est / 2, quiet: true}, 3, true},
		{"rejects everything, sizes stated", fakeProvider{factor: 1, limit: 0}, 16, false},
		{"rejects everything, no sizes", fakeProvider{factor: 1, limit: 0, quiet: true}, 16, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs := big
			attempt := 0
			for {
				perr := tc.p.send(msgs)
				if perr == nil {
					if !tc.accepted {
						t.Fatal("accepted")
					}
					break
				}
				attempt++
				if attempt > tc.maxAttempts {
					t.Fatalf("still rejected after %d attempts (%d messages left)", tc.maxAttempts, len(msgs))
				}
				before := Estimate(msgs, Heuristic())
				res, err := RecoverOverflow(msgs, perr, attempt)
				if errors.Is(err, ErrCannotRecover) {
					if tc.accepted {
						t.Fatalf("gave up at attempt %d: %v", attempt, err)
					}
					if !errors.Is(err, perr) {
						t.Fatal("provider error not wrapped")
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if !res.Trimmed || res.TokensAfter >= before {
					t.Fatalf("attempt %d made no progress: %d -> %d", attempt, before, res.TokensAfter)
				}
				checkResult(t, msgs, res, true)
				msgs = res.Messages
			}
		})
	}
}

func TestOverflowTarget(t *testing.T) {
	tests := []struct {
		est     int
		ov      Overflow
		attempt int
		want    int
		reason  string
	}{
		{1000, Overflow{Used: 1100, Limit: 1000}, 1, 818, "1000 × 1000/1100 × 0.9"},
		{1000, Overflow{Used: 900, Limit: 1000}, 1, 999, "a provider that says it fits still gets less than before"},
		{1000, Overflow{}, 1, 750, "blind first attempt"},
		{1000, Overflow{}, 4, 125, "blind fourth attempt"},
		{1000, Overflow{Used: 5}, 1, 750, "Used without Limit is blind"},
		{0, Overflow{}, 1, 1, "never below 1"},
		{1, Overflow{Used: 10, Limit: 5}, 1, 1, "never below 1"},
		{1 << 30, Overflow{Used: 1 << 30, Limit: 1 << 30}, math.MaxInt, 1, "no overflow in the arithmetic"},
	}
	for _, tc := range tests {
		if got := overflowTarget(tc.est, tc.ov, tc.attempt); got != tc.want {
			t.Errorf("overflowTarget(%d, %+v, %d) = %d, want %d (%s)", tc.est, tc.ov, tc.attempt, got, tc.want, tc.reason)
		}
	}
}

func ExampleRecoverOverflow() {
	history := []Message{
		{Role: RoleSystem, Content: "You are a coding agent."},
		{Role: RoleUser, Content: "Read main.go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"main.go"}`}}},
		{Role: RoleTool, ToolCallID: "c1", Content: strings.Repeat("package main // ...\n", 200)},
		{Role: RoleAssistant, Content: "main.go starts the server."},
		{Role: RoleUser, Content: "Now add a health check."},
	}
	// The provider rejected the request; this is the error as the SDK
	// returned it, possibly wrapped by the runtime.
	providerErr := fmt.Errorf("turn 2: %w", errors.New(
		`400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 1400 tokens > 1000 maximum"}}`))

	res, err := RecoverOverflow(history, providerErr, 1, WithOnTrim(func(e Event) {
		fmt.Printf("%s: dropped %d turn(s), %d -> %d tokens (budget %d, attempt %d)\n",
			e.Reason, e.DroppedTurns, e.TokensBefore, e.TokensAfter, e.Budget, e.Attempt)
	}))
	switch {
	case errors.Is(err, ErrCannotRecover):
		fmt.Println("give up:", err)
	case err != nil:
		fmt.Println("not an overflow:", err)
	default:
		fmt.Println("retry with", len(res.Messages), "messages:")
		for _, m := range res.Messages {
			fmt.Printf("  %s: %s\n", m.Role, m.Content)
		}
	}
	// Output:
	// overflow: dropped 1 turn(s), 1300 -> 33 tokens (budget 835, attempt 1)
	// retry with 3 messages:
	//   system: You are a coding agent.
	//   user: [earlier turns omitted to fit the context window]
	//   user: Now add a health check.
}
