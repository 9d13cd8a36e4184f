package models

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// fields is a JSON object with its fields left raw.
type fields = map[string]json.RawMessage

// ask sends one request of a probe that has not yet recognised its server:
// a transport failure stops Discover (err), any other failure (an HTTP
// error, a body over the limit, an answer that is not a JSON object) is
// "not this kind" (ok false).
func ask(ctx context.Context, c *http.Client, method, url string, body []byte) (a answer, obj fields, ok bool, err error) {
	a, err = fetch(ctx, c, method, url, body, localLimit)
	if err != nil {
		if transportFailure(err) {
			return a, nil, false, err
		}
		return a, nil, false, nil
	}
	if !a.ok() {
		return a, nil, false, nil
	}
	obj, ok = object(a.body)
	return a, obj, ok, nil
}

// answerError turns a failed request of a recognised server into the
// error Discover reports: a transport failure as is, anything else as
// ErrNoWindow.
func answerError(a answer, err error) error {
	if transportFailure(err) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoWindow, err)
	}
	return fmt.Errorf("%w: %s answered HTTP %d", ErrNoWindow, a.url, a.status)
}

// entries decodes a JSON array of objects; elements that are not objects
// are skipped.
func entries(raw []byte) ([]fields, bool) {
	elems, ok := array(raw)
	if !ok {
		return nil, false
	}
	out := make([]fields, 0, len(elems))
	for _, e := range elems {
		if o, ok := object(e); ok {
			out = append(out, o)
		}
	}
	return out, true
}

// find returns the first entry one of whose keys is name exactly, else the
// first one equal to it ignoring case.
func find(list []fields, name string, keys ...string) (fields, bool) {
	if name == "" {
		return nil, false
	}
	for _, fold := range []bool{false, true} {
		for _, e := range list {
			for _, k := range keys {
				s, ok := text(e[k])
				if ok && (s == name || (fold && strings.EqualFold(s, name))) {
					return e, true
				}
			}
		}
	}
	return nil, false
}

// probeOllama recognises Ollama by GET /api/version and reads the window
// in force (see Discover).
func probeOllama(ctx context.Context, c *http.Client, root, model string) (Model, bool, error) {
	_, v, ok, err := ask(ctx, c, http.MethodGet, root+"/api/version", nil)
	if err != nil || !ok {
		return Model{}, false, err
	}
	if _, isText := text(v["version"]); !isText {
		return Model{}, false, nil
	}
	m, err := ollamaWindow(ctx, c, root, model)
	return m, true, err
}

func ollamaWindow(ctx context.Context, c *http.Client, root, model string) (Model, error) {
	body, _ := json.Marshal(map[string]string{"model": model}) // a string map always marshals
	show, err := fetch(ctx, c, http.MethodPost, root+"/api/show", body, localLimit)
	if err != nil {
		return Model{}, answerError(show, err)
	}
	if show.status == http.StatusNotFound || show.status == http.StatusBadRequest {
		return Model{}, fmt.Errorf("%w: %s answered HTTP %d", ErrModelNotFound, show.url, show.status)
	}
	if !show.ok() {
		return Model{}, answerError(show, nil)
	}
	obj, ok := object(show.body)
	if !ok {
		return Model{}, fmt.Errorf("%w: %s answered no JSON object", ErrNoWindow, show.url)
	}
	info, _ := object(obj["model_info"])
	trained := ollamaTrained(info)
	params, _ := text(obj["parameters"])
	numCtx := ollamaNumCtx(params)
	loaded, psURL := ollamaLoaded(ctx, c, root, model)
	if err := ctx.Err(); err != nil {
		return Model{}, err
	}
	m := Model{Name: model, Provider: "ollama", Source: show.url}
	switch {
	case loaded > 0:
		m.Window, m.Source = smallest(loaded, trained), psURL
	case numCtx > 0:
		m.Window = smallest(numCtx, trained)
	case trained > 0:
		m.Window = smallest(UnloadedWindow, trained)
	default:
		return Model{}, fmt.Errorf("%w: %s gave no context length and the model is not loaded", ErrNoWindow, show.url)
	}
	return m, nil
}

// ollamaTrained reads the model's own maximum context from /api/show's
// model_info: "<general.architecture>.context_length", else the smallest
// "*.context_length" present.
func ollamaTrained(info fields) int {
	if arch, ok := text(info["general.architecture"]); ok && arch != "" {
		if n, ok := count(info[arch+".context_length"]); ok {
			return n
		}
	}
	best := 0
	for k, v := range info {
		if strings.HasSuffix(k, ".context_length") {
			if n, ok := count(v); ok {
				best = smallest(best, n)
			}
		}
	}
	return best
}

// ollamaNumCtx reads num_ctx from /api/show's parameters, one
// "name<spaces>value" per line.
func ollamaNumCtx(params string) int {
	n := 0
	for _, line := range strings.Split(params, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if v, err := strconv.Atoi(f[1]); err == nil && v >= 1 && v <= maxTokens {
				n = v
			}
		}
	}
	return n
}

// ollamaLoaded returns the context_length /api/ps reports for the model
// when it is loaded, and the URL asked; 0 when it is not loaded or /api/ps
// gives nothing usable (older servers omit context_length).
func ollamaLoaded(ctx context.Context, c *http.Client, root, model string) (int, string) {
	url := root + "/api/ps"
	a, err := fetch(ctx, c, http.MethodGet, url, nil, localLimit)
	if err != nil || !a.ok() {
		return 0, url
	}
	obj, _ := object(a.body)
	list, _ := entries(obj["models"])
	want := ollamaName(model)
	for _, e := range list {
		for _, k := range []string{"name", "model"} {
			if s, ok := text(e[k]); ok && ollamaName(s) == want {
				n, _ := count(e["context_length"])
				return n, url
			}
		}
	}
	return 0, url
}

// ollamaName is an Ollama model name with its default tag: "llama3.1" and
// "llama3.1:latest" name the same model.
func ollamaName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if !strings.Contains(lastSegment(s), ":") {
		s += ":latest"
	}
	return s
}

// probeLMStudio recognises LM Studio by its GET /api/v0/models list.
func probeLMStudio(ctx context.Context, c *http.Client, root, model string) (Model, bool, error) {
	a, obj, ok, err := ask(ctx, c, http.MethodGet, root+"/api/v0/models", nil)
	if err != nil || !ok {
		return Model{}, false, err
	}
	list, isList := entries(obj["data"])
	if !isList {
		return Model{}, false, nil
	}
	e, found := find(list, model, "id")
	if !found {
		return Model{}, true, fmt.Errorf("%w: %s does not list it", ErrModelNotFound, a.url)
	}
	state, _ := text(e["state"])
	loaded, _ := count(e["loaded_context_length"])
	maxCtx, _ := count(e["max_context_length"])
	m := Model{Name: model, Provider: "lmstudio", Source: a.url}
	switch {
	case state == "loaded" && loaded > 0:
		m.Window = smallest(loaded, maxCtx)
	case maxCtx > 0:
		m.Window = smallest(UnloadedWindow, maxCtx)
	default:
		return Model{}, true, fmt.Errorf("%w: %s gives no context length for it", ErrNoWindow, a.url)
	}
	return m, true, nil
}

// probeLlamaCpp recognises llama.cpp's server by GET /props.
func probeLlamaCpp(ctx context.Context, c *http.Client, root, model string) (Model, bool, error) {
	a, obj, ok, err := ask(ctx, c, http.MethodGet, root+"/props", nil)
	if err != nil || !ok {
		return Model{}, false, err
	}
	settings, hasSettings := object(obj["default_generation_settings"])
	_, hasCtx := obj["n_ctx"]
	_, hasSlots := obj["total_slots"]
	if !hasSettings && !hasCtx && !hasSlots {
		return Model{}, false, nil
	}
	n, ok := count(settings["n_ctx"])
	if !ok {
		n, ok = count(obj["n_ctx"])
	}
	if !ok {
		return Model{}, true, fmt.Errorf("%w: %s gives no n_ctx", ErrNoWindow, a.url)
	}
	return Model{Name: model, Provider: "llamacpp", Window: n, Source: a.url}, true, nil
}

// probeVLLM recognises vLLM by GET /v1/models listing max_model_len (or
// owned_by "vllm").
func probeVLLM(ctx context.Context, c *http.Client, root, model string) (Model, bool, error) {
	a, obj, ok, err := ask(ctx, c, http.MethodGet, root+"/v1/models", nil)
	if err != nil || !ok {
		return Model{}, false, err
	}
	list, isList := entries(obj["data"])
	if !isList {
		return Model{}, false, nil
	}
	vllm := false
	for _, e := range list {
		owner, _ := text(e["owned_by"])
		_, hasLen := e["max_model_len"]
		vllm = vllm || owner == "vllm" || hasLen
	}
	if !vllm {
		return Model{}, false, nil
	}
	e, found := find(list, model, "id")
	if !found {
		return Model{}, true, fmt.Errorf("%w: %s does not list it", ErrModelNotFound, a.url)
	}
	n, ok := count(e["max_model_len"])
	for _, k := range []string{"parent", "root"} { // a LoRA adapter's base model
		if base, isText := text(e[k]); !ok && isText {
			if b, found := find(list, base, "id"); found {
				n, ok = count(b["max_model_len"])
			}
		}
	}
	if !ok {
		return Model{}, true, fmt.Errorf("%w: %s gives no max_model_len for it", ErrNoWindow, a.url)
	}
	return Model{Name: model, Provider: "vllm", Window: n, Source: a.url}, true, nil
}

// probeOpenRouter reads the model's limits from OpenRouter's list of
// models: the smaller of context_length and top_provider.context_length,
// and top_provider.max_completion_tokens.
func probeOpenRouter(ctx context.Context, c *http.Client, root, model string) (Model, error) {
	a, err := fetch(ctx, c, http.MethodGet, root+"/api/v1/models", nil, openRouterLimit)
	if err != nil {
		return Model{}, answerError(a, err)
	}
	if !a.ok() {
		return Model{}, answerError(a, nil)
	}
	obj, _ := object(a.body)
	list, ok := entries(obj["data"])
	if !ok {
		return Model{}, fmt.Errorf("%w: %s answered no list of models", ErrNoWindow, a.url)
	}
	e, found := find(list, model, "id", "canonical_slug")
	if !found {
		return Model{}, fmt.Errorf("%w: %s does not list it", ErrModelNotFound, a.url)
	}
	top, _ := object(e["top_provider"])
	ctxLen, _ := count(e["context_length"])
	topLen, _ := count(top["context_length"])
	out, _ := count(top["max_completion_tokens"])
	window := smallest(ctxLen, topLen)
	if window == 0 {
		return Model{}, fmt.Errorf("%w: %s gives no context_length for it", ErrNoWindow, a.url)
	}
	m := Model{Name: model, Provider: "openrouter", Window: window, Output: out, Source: a.url}
	if id, ok := text(e["id"]); ok {
		if r, known := resolve(id); known {
			m.Tokenizer = r.tokenizer
		}
	}
	return m, nil
}
