package models

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DiscoverTimeout bounds how long Discover takes, all probes included,
// when the caller's context allows longer.
const DiscoverTimeout = 10 * time.Second

// UnloadedWindow is the window Discover reports for a model that Ollama or
// LM Studio has not loaded and whose context no setting it can read fixes:
// the server picks the context when it loads the model. 4,096 tokens is the
// smallest default Ollama picks (below 24 GiB of VRAM), so a budget within
// it is not truncated there; LM Studio loads with the model's load
// settings. Discover reports the model's own maximum when that is smaller,
// and the loaded context once the model is loaded.
const UnloadedWindow = 4096

// Errors Discover wraps, in a *DiscoverError: test with errors.Is.
var (
	// ErrNoServer: nothing at the base URL answered as a server Discover
	// knows (or the base URL is not an absolute http or https URL). An
	// OpenAI-compatible server that reports no window per model is not
	// one Discover knows: give its window yourself.
	ErrNoServer = errors.New("history/models: no server Discover knows answered")
	// ErrModelNotFound: the server answered but does not serve the model
	// under that name.
	ErrModelNotFound = errors.New("history/models: the server does not serve the model")
	// ErrNoWindow: the server serves the model but reported no usable
	// window: the field is missing, zero, negative, not a number, or the
	// answer is malformed or larger than Discover reads.
	ErrNoWindow = errors.New("history/models: the server reported no usable window")
)

// DiscoverError is the error Discover returns. It wraps one of ErrNoServer,
// ErrModelNotFound and ErrNoWindow, or the transport or context error that
// stopped Discover (context.DeadlineExceeded when DiscoverTimeout or the
// caller's deadline passed).
type DiscoverError struct {
	// URL is the base URL Discover was given.
	URL string
	// Server is the kind of server that answered ("ollama", "vllm",
	// "llamacpp", "lmstudio", "openrouter"), or "" when none did.
	Server string
	// Model is the model Discover was asked about.
	Model string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *DiscoverError) Error() string {
	server := "no server"
	if e.Server != "" {
		server = e.Server
	}
	msg := fmt.Sprintf("history/models: discover %q at %s (%s): %v", e.Model, e.URL, server, e.Err)
	if e.Server == "ollama" && errors.Is(e.Err, ErrModelNotFound) {
		msg += " (pull it first: ollama pull " + e.Model + ")"
	}
	return msg
}

// Unwrap returns the cause.
func (e *DiscoverError) Unwrap() error { return e.Err }

// server is one kind of server Discover knows: how to recognise it and
// read the window it runs a model with. probe reports recognized=false
// when the answers are not this kind's, so that Discover asks the next.
type server struct {
	kind  string
	probe func(ctx context.Context, c *http.Client, root, model string) (m Model, recognized bool, err error)
}

// localServers are probed in this order at any base URL that is not
// OpenRouter's: each probe costs one request when the server is another
// kind (see docs/models.md for the endpoints).
var localServers = []server{
	{"ollama", probeOllama},
	{"lmstudio", probeLMStudio},
	{"llamacpp", probeLlamaCpp},
	{"vllm", probeVLLM},
}

// Discover asks the server at baseURL the context window it actually runs
// model with: a local server (Ollama, LM Studio, llama.cpp's llama-server,
// vLLM) or OpenRouter. baseURL is the URL given to the OpenAI SDK or the
// server's root ("http://localhost:11434", "http://localhost:1234/v1",
// "http://localhost:8080/v1", "http://localhost:8000/v1",
// "https://openrouter.ai/api/v1"); a trailing "/v1", "/api/v1", "/api/v0"
// or "/api" is dropped to find the root. client is used for every
// request (nil means http.DefaultClient): give it the transport, proxy or
// authentication the server needs.
//
// A base URL on openrouter.ai is asked GET /api/v1/models; any other is
// probed, in this fixed order, until one answers as its kind:
//
//   - Ollama: GET /api/version, then POST /api/show for the model's own
//     maximum ("<arch>.context_length") and its Modelfile's num_ctx, and
//     GET /api/ps for the context of the loaded model ("context_length").
//   - LM Studio: GET /api/v0/models, the model's "loaded_context_length"
//     when it is loaded, else its "max_context_length" (see below).
//   - llama.cpp: GET /props, "default_generation_settings.n_ctx" (the
//     context of one slot, what one request gets), else a top-level "n_ctx".
//   - vLLM: GET /v1/models, the model's "max_model_len" (a LoRA adapter's
//     is its base model's).
//
// The Window returned is the one in force, which for a local server is
// often far below what the model supports. Ollama runs a model with the
// num_ctx of the request's options, else of its Modelfile, else
// OLLAMA_CONTEXT_LENGTH, else 4,096 to 256k tokens by VRAM, and silently
// drops the oldest messages of a longer prompt: Discover reports the
// context of the loaded model, else the Modelfile's num_ctx, else
// UnloadedWindow. Set the context you want where Ollama reads it (the
// num_ctx option of every request, the Modelfile's PARAMETER num_ctx, or
// OLLAMA_CONTEXT_LENGTH), and give the same figure to the trimmer if your
// requests set num_ctx themselves. LM Studio likewise reports a loaded
// model's context; an unloaded one is loaded with the context of its load
// settings, so Discover reports UnloadedWindow (or the model's maximum
// when smaller) until it is loaded. llama.cpp splits its -c context
// between its --parallel slots unless its KV cache is unified; /props
// reports what one slot, and so one request, gets. Output is OpenRouter's
// top_provider.max_completion_tokens, 0 for the local servers, which cap
// output only by the window.
//
// Model.Provider is the kind of server, Source the URL of the endpoint
// that gave the window, Tokenizer is filled from the table for an
// OpenRouter model Lookup knows, and Checked is "" (the figures are live).
// llama.cpp serves one model whatever the name, so model may be "" there.
//
// Discover returns within DiscoverTimeout, sooner when ctx ends. It reads
// at most 1 MiB of each local answer and 8 MiB of OpenRouter's list. Any
// failure is a *DiscoverError wrapping ErrNoServer, ErrModelNotFound,
// ErrNoWindow, or the transport or context error; a probe's HTTP error or
// unrecognised answer only moves on to the next kind. Discover is safe for
// concurrent use.
func Discover(ctx context.Context, client *http.Client, baseURL, model string) (Model, error) {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, DiscoverTimeout)
	defer cancel()
	fail := func(kind string, err error) (Model, error) {
		return Model{}, &DiscoverError{URL: baseURL, Server: kind, Model: model, Err: err}
	}
	root, host, err := serverRoot(baseURL)
	if err != nil {
		return fail("", err)
	}
	if host == "openrouter.ai" || strings.HasSuffix(host, ".openrouter.ai") {
		m, err := probeOpenRouter(ctx, client, root, model)
		if err != nil {
			return fail("openrouter", err)
		}
		return m, nil
	}
	for _, s := range localServers {
		m, recognized, err := s.probe(ctx, client, root, model)
		if recognized {
			if err != nil {
				return fail(s.kind, err)
			}
			return m, nil
		}
		if err != nil { // the server cannot be reached at all: stop
			return fail("", err)
		}
	}
	return fail("", ErrNoServer)
}

// serverRoot returns the root URL of the server baseURL points into, and
// its lowercased host.
func serverRoot(baseURL string) (root, host string, err error) {
	u, perr := url.Parse(strings.TrimSpace(baseURL))
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("%w (base URL is not an absolute http or https URL)", ErrNoServer)
	}
	path := strings.TrimRight(u.Path, "/")
	for _, suffix := range []string{"/api/v1", "/api/v0", "/v1", "/api"} {
		if p, ok := strings.CutSuffix(path, suffix); ok {
			path = p
			break
		}
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment = path, "", "", ""
	return u.String(), strings.ToLower(u.Hostname()), nil
}

// transportFailure reports whether err means the server could not be
// asked at all (as opposed to a bad answer), so probing should stop.
func transportFailure(err error) bool {
	return err != nil && !errors.Is(err, errTooLarge)
}
