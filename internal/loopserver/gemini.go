package loopserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/histrim/history"
)

// Gemini's HTTP 400 bodies. GeminiOverflowBody answers a request over the
// window (%d: the request's count, then the window); GeminiCountBody and
// GeminiOrderBody answer contents that break the pairing of function
// calls and responses (google-gemini/gemini-cli#5443, #16984).
const (
	GeminiOverflowBody = `{"error":{"code":400,"message":"The input token count (%d) exceeds the maximum number of tokens allowed (%d).","status":"INVALID_ARGUMENT"}}`
	GeminiCountBody    = `{"error":{"code":400,"message":"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.","status":"INVALID_ARGUMENT"}}`
	GeminiOrderBody    = `{"error":{"code":400,"message":"Please ensure that function response turn comes immediately after a function call turn.","status":"INVALID_ARGUMENT"}}`
)

// Gemini is a local Gemini API endpoint: an http.Handler that answers
// POST .../models/<model>:generateContent and :streamGenerateContent
// (?alt=sse) as the scripted model ([Play]), with the request's count (by
// Judge, over its system instruction and contents) as
// usageMetadata.promptTokenCount. Contents that break Gemini's pairing of
// function calls and responses get the API's HTTP 400 for it; a request
// whose count exceeds the window, the API's INVALID_ARGUMENT overflow
// ([GeminiOverflowBody]). It is safe for concurrent requests.
type Gemini struct {
	// Judge counts and checks the requests.
	Judge Judge
	// Window is the window the overflow body states.
	Window int

	counter
}

// geminiRequest is what the endpoint reads of a generateContent request.
type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             json.RawMessage `json:"tools"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
	InlineData *struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData"`
}

// geminiHistory converts a request's system instruction and contents, as
// they travel, to history messages: a model content is one assistant
// message (thoughts as reasoning, function calls as tool calls); a user
// content is one tool message per function response (counted as its
// response's JSON) and one user message for its other parts. Calls and
// responses are paired by id, or by name when either lacks one.
func geminiHistory(req *geminiRequest) []history.Message {
	var out []history.Message
	if req.SystemInstruction != nil {
		var b strings.Builder
		for _, p := range req.SystemInstruction.Parts {
			b.WriteString(p.Text)
		}
		out = append(out, history.Message{Role: history.RoleSystem, Content: b.String()})
	}
	for _, c := range req.Contents {
		var text strings.Builder
		var parts []history.Part
		var calls []history.ToolCall
		var results []history.Message
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				calls = append(calls, history.ToolCall{ID: key(p.FunctionCall.ID, p.FunctionCall.Name), Name: p.FunctionCall.Name, Arguments: string(p.FunctionCall.Args)})
			case p.FunctionResponse != nil:
				results = append(results, history.Message{Role: history.RoleTool, ToolCallID: key(p.FunctionResponse.ID, p.FunctionResponse.Name),
					Name: p.FunctionResponse.Name, Content: string(p.FunctionResponse.Response)})
			case p.Thought:
				parts = append(parts, history.Part{Type: history.PartReasoning, Text: p.Text})
			case p.InlineData != nil:
				parts = append(parts, history.Part{Type: history.PartFile, MIMEType: p.InlineData.MIMEType, Size: int64(len(p.InlineData.Data) * 3 / 4)})
			default:
				text.WriteString(p.Text)
			}
		}
		if c.Role == "model" {
			out = append(out, history.Message{Role: history.RoleAssistant, Content: text.String(), Parts: parts, ToolCalls: calls})
			continue
		}
		out = append(out, results...)
		if text.Len() > 0 || len(parts) > 0 || len(results) == 0 {
			out = append(out, history.Message{Role: history.RoleUser, Content: text.String(), Parts: parts})
		}
	}
	return out
}

// key is the id a call or response pairs by: its id, or its name.
func key(id, name string) string {
	if id != "" {
		return id
	}
	return "name:" + name
}

// geminiPairing applies the API's rule on function calls to contents, by
// their parts alone, and returns the API's 400 body for the first
// violation, or "": a content of function responses comes right after a
// model content of function calls and answers each call once (by id when
// all have one, by name otherwise), and a content of function calls is
// followed by one that answers them.
func geminiPairing(contents []geminiContent) string {
	calls := func(c geminiContent) (ids, names []string) {
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				ids, names = append(ids, p.FunctionCall.ID), append(names, p.FunctionCall.Name)
			}
		}
		return ids, names
	}
	responses := func(c geminiContent) (ids, names []string) {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				ids, names = append(ids, p.FunctionResponse.ID), append(names, p.FunctionResponse.Name)
			}
		}
		return ids, names
	}
	same := func(a, b []string) bool {
		a, b = slices.Clone(a), slices.Clone(b)
		slices.Sort(a)
		slices.Sort(b)
		return slices.Equal(a, b)
	}
	for i, c := range contents {
		if rids, rnames := responses(c); len(rnames) > 0 {
			if i == 0 || contents[i-1].Role != "model" {
				return GeminiOrderBody
			}
			cids, cnames := calls(contents[i-1])
			if len(cnames) == 0 {
				return GeminiOrderBody
			}
			byID := !slices.Contains(cids, "") && !slices.Contains(rids, "")
			if (byID && !same(cids, rids)) || (!byID && !same(cnames, rnames)) {
				return GeminiCountBody
			}
		}
		if _, names := calls(c); len(names) > 0 {
			if i+1 == len(contents) {
				return GeminiCountBody
			}
			if _, rnames := responses(contents[i+1]); len(rnames) == 0 {
				return GeminiCountBody
			}
		}
	}
	return ""
}

// ServeHTTP answers one generateContent or streamGenerateContent request.
func (s *Gemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.count(func(st *Stats) { st.Requests++ })
	path := r.URL.Path
	streamed := strings.HasSuffix(path, ":streamGenerateContent")
	if r.Method != http.MethodPost || !(streamed || strings.HasSuffix(path, ":generateContent")) || !strings.Contains(path, "/models/") {
		s.count(func(st *Stats) { st.BadRequests++ })
		s.problem("unexpected request %s %s", r.Method, path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	model := path[strings.LastIndex(path, "/models/")+len("/models/") : strings.LastIndexByte(path, ':')]
	var req geminiRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Contents) == 0 {
		s.count(func(st *Stats) { st.BadRequests++ })
		s.problem("undecodable request or no contents: %v", err)
		writeJSON(w, http.StatusBadRequest, `{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified\n","status":"INVALID_ARGUMENT"}}`)
		return
	}
	msgs := geminiHistory(&req)
	holds := func(text string) bool {
		for _, c := range req.Contents {
			if c.Role == "model" {
				continue
			}
			for _, p := range c.Parts {
				if p.Text == text {
					return true
				}
			}
		}
		return false
	}
	prompt, _, ok := s.judge(w, s.Judge, geminiPairing(req.Contents), msgs, req.Tools, holds,
		func(prompt int) string { return fmt.Sprintf(GeminiOverflowBody, prompt, s.Window) })
	if !ok {
		return
	}
	reply := Play(msgs)
	var parts []any
	if len(reply.Calls) == 0 {
		parts = append(parts, map[string]any{"text": reply.Text})
	} else {
		parts = append(parts, map[string]any{"text": "Step " + strconv.Itoa(len(reply.Calls)) + ": reading what I need."})
		for _, c := range reply.Calls {
			parts = append(parts, map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Name, "args": json.RawMessage(c.Arguments)}})
		}
	}
	out := 12 + 20*len(reply.Calls)
	body, _ := json.Marshal(map[string]any{ // maps of strings, numbers, slices and valid raw JSON always encode
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out},
		"modelVersion":  model,
	})
	if streamed {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "data: %s\r\n\r\n", body)
		return
	}
	writeJSON(w, http.StatusOK, string(body))
}
