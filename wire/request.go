package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/histrim/history/internal/wireapi"
)

// API is a provider API whose requests the package reads.
type API uint8

// The APIs the package reads. The zero API is none: a request on another
// path is forwarded untouched.
const (
	// ChatCompletions is OpenAI's POST /v1/chat/completions, and the
	// servers that speak it (vLLM, llama.cpp, Ollama's /v1, LM Studio,
	// OpenRouter).
	ChatCompletions API = iota + 1
	// AnthropicMessages is Anthropic's POST /v1/messages.
	AnthropicMessages
	// Responses is OpenAI's POST /v1/responses. Its items are read with
	// the rules of the responses adapter, which lives in a module of its
	// own (it needs openai-go): the Transport trims these requests only
	// in a program that imports github.com/histrim/history/adapters/responses
	// and calls its RegisterWire (cmd/histrim-gateway does); elsewhere
	// they are forwarded untouched, their Event's Err wrapping
	// ErrNotRegistered.
	Responses
	// Gemini is Google's Gemini API, POST .../models/{model}:generateContent
	// and :streamGenerateContent (the model is read from the path). Its
	// contents are read with the rules of the gemini adapter, which lives
	// in a module of its own (it needs google.golang.org/genai): the
	// Transport trims these requests only in a program that imports
	// github.com/histrim/history/adapters/gemini and calls its
	// RegisterWire (cmd/histrim-gateway does); elsewhere they are
	// forwarded untouched, their Event's Err wrapping ErrNotRegistered.
	Gemini
)

// String returns the API's name as events and metrics show it.
func (a API) String() string {
	switch a {
	case ChatCompletions:
		return "chat_completions"
	case AnthropicMessages:
		return "anthropic_messages"
	case Responses:
		return "openai_responses"
	case Gemini:
		return "gemini_generate_content"
	}
	return "unknown"
}

// Trims reports whether a [Transport] trims requests of a in this
// program: ChatCompletions and AnthropicMessages always; Responses and
// Gemini once an adapter registered its codec (adapters/responses' and
// adapters/gemini's RegisterWire).
func (a API) Trims() bool {
	switch a {
	case ChatCompletions, AnthropicMessages:
		return true
	case Responses, Gemini:
		return wireapi.Lookup(a.String()) != nil
	}
	return false
}

// Detect returns the API a request path belongs to, read from the path's
// end so that any base URL or prefix works: .../chat/completions is
// ChatCompletions, .../v1/messages AnthropicMessages, .../responses
// Responses, ...:generateContent and ...:streamGenerateContent Gemini; 0
// for a path the package does not read.
func Detect(path string) API {
	path = strings.TrimRight(path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return ChatCompletions
	case strings.HasSuffix(path, "/v1/messages"):
		return AnthropicMessages
	case strings.HasSuffix(path, "/responses"):
		return Responses
	case strings.HasSuffix(path, ":generateContent"), strings.HasSuffix(path, ":streamGenerateContent"):
		return Gemini
	}
	return 0
}

// ErrUnknownAPI is returned by [Parse] for a path that [Detect] does not
// recognise.
var ErrUnknownAPI = errors.New("history/wire: not a request of an API the package reads")

// ErrNotRegistered is wrapped by the Err of the [Event] of a request of
// an API whose codec no adapter registered (see [Responses]): the request
// is forwarded untouched.
var ErrNotRegistered = errors.New("history/wire: no adapter registered the codec of this API")

// ErrNoMessages is returned by [Parse] for a body with no messages array
// (Gemini: no contents array; Responses: no input array; an input that is one string is one user
// message, which no trim shortens).
var ErrNoMessages = errors.New("history/wire: the request has no messages")

// Request is a request body as the package reads it: the few fields the
// trim needs, and the messages, each kept as the bytes it came in.
// Everything else of the body stays as it came, in its order, and
// [Request.Body] re-emits it byte for byte. A Request is read-only once
// parsed and does not share memory the caller writes to: Parse keeps its
// own reference to body, which the caller must not modify afterwards.
type Request struct {
	// API is the request's API.
	API API
	// Model is the model named by the body ("model"; Gemini's by the
	// path: .../models/{model}:generateContent).
	Model string
	// Stream reports whether the response is streamed ("stream": true;
	// Gemini's :streamGenerateContent).
	Stream bool
	// MaxOutput is the output room the request asks for
	// (max_completion_tokens, else max_tokens; Responses'
	// max_output_tokens; Gemini's generationConfig.maxOutputTokens); 0
	// when it names none.
	MaxOutput int
	// Key is the request's own conversation key: prompt_cache_key, else
	// user (Chat Completions, Responses); metadata.user_id (Anthropic);
	// "" when it has none.
	Key string

	body   []byte
	msgs   span              // the messages array in body
	items  []json.RawMessage // its elements, sharing body's memory
	system json.RawMessage   // a system prompt the API takes apart (Anthropic's "system", Responses' "instructions", Gemini's "systemInstruction")
	extra  []string          // what the request sends besides its messages, counted as overhead
	params json.RawMessage   // a registered API's: the body with an empty messages array, which its codec reads
}

// Parse reads body, the JSON body of a request to path. It returns
// ErrUnknownAPI for a path that [Detect] does not recognise, ErrNoMessages
// for a body without a messages array, and an error for a body that is
// not a JSON object. It never panics, whatever the bytes, and never
// modifies body.
func Parse(path string, body []byte) (*Request, error) {
	return parse(path, body, nil)
}

// parse is Parse reading the messages array through memo (see
// elementsAt), when it is not nil.
func parse(path string, body []byte, memo *scanMemo) (*Request, error) {
	api := Detect(path)
	if api == 0 {
		return nil, ErrUnknownAPI
	}
	var got taken
	ms, els, ok, err := objectArray(body, messagesMember(api), memo, &got)
	if err != nil {
		return nil, err
	}
	r := &Request{API: api, body: body}
	str := func(name string) string {
		var s string
		if m, ok := find(ms, name); ok {
			_ = json.Unmarshal(body[m.val.start:m.val.end], &s) // not a string: ""
		}
		return s
	}
	num := func(name string) int {
		var n int
		if m, ok := find(ms, name); ok {
			_ = json.Unmarshal(body[m.val.start:m.val.end], &n)
		}
		return max(n, 0)
	}
	raw := func(name string) string {
		if m, ok := find(ms, name); ok {
			return string(body[m.val.start:m.val.end])
		}
		return ""
	}
	r.Model = str("model")
	if m, ok := find(ms, "stream"); ok {
		r.Stream = string(body[m.val.start:m.val.end]) == "true"
	}
	switch api {
	case ChatCompletions:
		r.MaxOutput = num("max_completion_tokens")
		if r.MaxOutput == 0 {
			r.MaxOutput = num("max_tokens")
		}
		r.Key = str("prompt_cache_key")
		if r.Key == "" {
			r.Key = str("user")
		}
		r.extra = []string{raw("tools"), raw("functions"), raw("response_format")}
		if err := r.readMessages(ms, els, ok, got); err != nil {
			return nil, err
		}
	case AnthropicMessages:
		r.MaxOutput = num("max_tokens")
		if m, ok := find(ms, "metadata"); ok {
			var md struct {
				UserID string `json:"user_id"`
			}
			_ = json.Unmarshal(body[m.val.start:m.val.end], &md)
			r.Key = md.UserID
		}
		if m, ok := find(ms, "system"); ok {
			r.system = json.RawMessage(body[m.val.start:m.val.end:m.val.end])
		}
		// What the adapters count besides the messages and system: the
		// tools and the output schema, as one text.
		var extra []byte
		for _, name := range []string{"tools", "output_config", "output_format"} {
			if v := raw(name); v != "" {
				extra = append(extra, v...)
				extra = append(extra, '\n')
			}
		}
		r.extra = []string{string(extra)}
		if err := r.readMessages(ms, els, ok, got); err != nil {
			return nil, err
		}
	case Responses:
		r.MaxOutput = num("max_output_tokens")
		r.Key = str("prompt_cache_key")
		if r.Key == "" {
			r.Key = str("user")
		}
		// What the adapter's Overhead counts: the tools, the
		// instructions and the text format, each as one text.
		instructions := str("instructions")
		if instructions == "" {
			instructions = raw("instructions") // a list of items, or null
		}
		if m, ok := find(ms, "instructions"); ok {
			r.system = json.RawMessage(body[m.val.start:m.val.end:m.val.end])
		}
		r.extra = []string{raw("tools"), instructions, raw("text")}
		if err := r.readMessages(ms, els, ok, got); err != nil {
			return nil, err
		}
		r.params = r.Body([]json.RawMessage{})
	case Gemini:
		r.Model, r.Stream = geminiModel(path), strings.HasSuffix(strings.TrimRight(path, "/"), ":streamGenerateContent")
		// The REST API takes the proto's field names too.
		member := func(camel, snake string) (member, bool) {
			if m, ok := find(ms, camel); ok {
				return m, true
			}
			return find(ms, snake)
		}
		if m, ok := member("systemInstruction", "system_instruction"); ok {
			r.system = json.RawMessage(body[m.val.start:m.val.end:m.val.end])
		}
		// What the adapter's Overhead counts: the tools and the response
		// schemas, in one object.
		var gc struct {
			MaxOutputTokens    int             `json:"maxOutputTokens"`
			MaxOutputTokensPB  int             `json:"max_output_tokens"`
			ResponseSchema     json.RawMessage `json:"responseSchema"`
			ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		}
		if m, ok := member("generationConfig", "generation_config"); ok {
			_ = json.Unmarshal(body[m.val.start:m.val.end], &gc) // not an object: none
		}
		r.MaxOutput = max(gc.MaxOutputTokens, gc.MaxOutputTokensPB, 0)
		over := map[string]json.RawMessage{}
		if m, ok := find(ms, "tools"); ok {
			over["tools"] = json.RawMessage(body[m.val.start:m.val.end])
		}
		if len(gc.ResponseSchema) > 0 {
			over["responseSchema"] = gc.ResponseSchema
		}
		if len(gc.ResponseJSONSchema) > 0 {
			over["responseJsonSchema"] = gc.ResponseJSONSchema
		}
		if len(over) > 0 {
			b, _ := json.Marshal(over) // raw values of a parsed body: valid JSON
			r.extra = []string{string(b)}
		}
		if err := r.readMessages(ms, els, ok, got); err != nil {
			return nil, err
		}
		r.params = r.Body([]json.RawMessage{})
	}
	return r, nil
}

// geminiModel returns the model a Gemini path names: what stands between
// its last "/models/" and the method (":generateContent"), or "" when the
// path names none.
func geminiModel(path string) string {
	path = strings.TrimRight(path, "/")
	i := strings.LastIndex(path, "/models/")
	j := strings.LastIndexByte(path, ':')
	if i < 0 || j < i+len("/models/") {
		return ""
	}
	return path[i+len("/models/") : j]
}

// messagesMember names the member of api's body that holds the messages.
func messagesMember(api API) string {
	switch api {
	case Responses:
		return "input"
	case Gemini:
		return "contents"
	}
	return "messages"
}

// readMessages reads the request's messages: the elements els of its
// messagesMember array, as Parse's scan read them (objectArray, which
// read them when read is true). The first got.n are read from the array
// the memo gave them from: the same bytes, which are never written to
// (bytecache.Stable), where the body's are once its request is done.
func (r *Request) readMessages(ms []member, els []span, read bool, got taken) error {
	m, ok := find(ms, messagesMember(r.API))
	if !ok || !read {
		return ErrNoMessages
	}
	arr := r.body[m.val.start:m.val.end]
	r.msgs = m.val
	r.items = make([]json.RawMessage, len(els))
	for i, e := range els {
		if i < got.n {
			r.items[i] = json.RawMessage(got.from.arr[e.start:e.end:e.end])
		} else {
			r.items[i] = json.RawMessage(arr[e.start:e.end:e.end])
		}
	}
	return nil
}

// Messages returns the request's messages, each as the bytes it came in,
// in order. The slice is the caller's; the bytes must not be modified.
func (r *Request) Messages() []json.RawMessage {
	return append([]json.RawMessage(nil), r.items...)
}

// Body returns the request's body with msgs in place of its messages:
// every byte before and after the messages array as it came, the array
// the elements of msgs joined by commas. Body(r.Messages()) differs from
// the body parsed only in the whitespace between the array's elements;
// the body parsed is returned itself when msgs are its messages, the same
// bytes in the same order.
func (r *Request) Body(msgs []json.RawMessage) []byte {
	b, _ := r.newBody(msgs)
	return b
}

// newBody is Body, and whether the body returned was built anew (false:
// it is the body parsed).
func (r *Request) newBody(msgs []json.RawMessage) ([]byte, bool) {
	if sameMessages(msgs, r.items) {
		return r.body, false
	}
	n := len(r.body) - (r.msgs.end - r.msgs.start) + 2 + len(msgs)
	for _, m := range msgs {
		n += len(m)
	}
	out := make([]byte, 0, n)
	out = append(out, r.body[:r.msgs.start]...)
	out = append(out, '[')
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	out = append(out, ']')
	return append(out, r.body[r.msgs.end:]...), true
}

// sameMessages reports whether a and b are the same bytes (not merely
// equal ones) in the same order.
func sameMessages(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) || (len(a[i]) > 0 && &a[i][0] != &b[i][0]) {
			return false
		}
	}
	return true
}

// opening returns the key of a conversation that names none: a hash of
// its opening as it came (the leading system messages and the message
// after them), which a client that keeps its whole transcript resends
// first on every request of the conversation.
func (r *Request) opening() string {
	h := sha256.New()
	h.Write([]byte(r.API.String()))
	h.Write([]byte{0})
	h.Write(r.system)
	for _, m := range r.items {
		h.Write([]byte{0})
		h.Write(m)
		var role struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(m, &role) == nil && role.Role != "system" && role.Role != "developer" {
			break
		}
	}
	return "opening:" + hex.EncodeToString(h.Sum(nil)[:16])
}
