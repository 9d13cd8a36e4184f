package gemini

// An agent loop through the real google.golang.org/genai client against an
// httptest server that speaks the Gemini API's wire format and counts
// tokens its own way (a factor F on the library's estimate, plus the tool
// schemas as received), so that the calibration, the overhead, the ladder
// and the recovery from an overflow are exercised together, the way a
// runtime uses them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"google.golang.org/genai"
)

const (
	loopLimit = 8000 // the provider's window in TestAgentLoop, and the budget a runtime configures
	loopTools = 20
	loopModel = "gemini-2.5-flash"
)

// Gemini's HTTP 400 answers to contents that break the pairing of
// function calls and responses (google-gemini/gemini-cli#5443, #16984).
const (
	geminiCountBody = `{"error":{"code":400,"message":"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.","status":"INVALID_ARGUMENT"}}`
	geminiOrderBody = `{"error":{"code":400,"message":"Please ensure that function response turn comes immediately after a function call turn.","status":"INVALID_ARGUMENT"}}`
)

// loopServer answers generateContent requests as the Gemini API does: a
// scripted reply with usageMetadata.promptTokenCount, or, when its count of
// the request exceeds the window, the API's HTTP 400 INVALID_ARGUMENT
// overflow. It counts and checks each request through its
// adaptertest.Loop (the library's estimate of its contents and system
// instruction as ToHistory converts them, and the tools JSON as received),
// and rejects contents that break the pairing of function calls and
// responses with the API's 400.
type loopServer struct {
	loop *adaptertest.Loop

	mu       sync.Mutex
	problems []string // what the checks of the requests found besides the loop's bounds
}

// wireRequest is the body of a generateContent request, decoded into the SDK's
// own types.
type wireRequest struct {
	Contents          []*genai.Content `json:"contents"`
	SystemInstruction *genai.Content   `json:"systemInstruction"`
	Tools             json.RawMessage  `json:"tools"`
}

func (s *loopServer) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// requestHistory returns req's system instruction and contents as history
// messages.
func requestHistory(req *wireRequest) ([]history.Message, error) {
	hist, err := ToHistory(req.Contents)
	if err != nil {
		return nil, err
	}
	if req.SystemInstruction != nil {
		sys, err := ToHistory([]*genai.Content{{Role: genai.RoleUser, Parts: req.SystemInstruction.Parts}})
		if err != nil {
			return nil, err
		}
		sys[0].Role = history.RoleSystem
		hist = append(sys, hist...)
	}
	return hist, nil
}

// pairing applies the API's rule on function calls to contents, by their
// parts alone (independently of the adapter), and returns the API's 400
// body for the first violation, or "": a content of function responses
// comes right after a model content of function calls and answers each
// call once, and a content of function calls is followed by one that
// answers them.
func pairing(contents []*genai.Content) string {
	calls := func(c *genai.Content) []string {
		var ids []string
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				ids = append(ids, p.FunctionCall.ID)
			}
		}
		return ids
	}
	responses := func(c *genai.Content) []string {
		var ids []string
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				ids = append(ids, p.FunctionResponse.ID)
			}
		}
		return ids
	}
	for i, c := range contents {
		if resp := responses(c); len(resp) > 0 {
			if i == 0 || contents[i-1].Role != genai.RoleModel || len(calls(contents[i-1])) == 0 {
				return geminiOrderBody
			}
			want := calls(contents[i-1])
			slices.Sort(want)
			slices.Sort(resp)
			if !slices.Equal(want, resp) {
				return geminiCountBody
			}
		}
		if len(calls(c)) > 0 && (i+1 == len(contents) || len(responses(contents[i+1])) == 0) {
			return geminiCountBody
		}
	}
	return ""
}

func (s *loopServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	streamed := r.URL.Path == "/v1beta/models/"+loopModel+":streamGenerateContent" && r.URL.Query().Get("alt") == "sse"
	if r.Method != http.MethodPost || (r.URL.Path != "/v1beta/models/"+loopModel+":generateContent" && !streamed) {
		s.problem("unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req wireRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.problem("undecodable request: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.Tools) == 0 {
		s.problem("request without tools")
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if body := pairing(req.Contents); body != "" {
		s.loop.Unpaired(body)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, body)
		return
	}
	hist, err := requestHistory(&req)
	if err != nil {
		s.problem("request does not convert: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n, fits := s.loop.Receive(hist, string(req.Tools), func(text string) bool { return hasText(req.Contents, text) })
	if !fits {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"code":400,"message":"The input token count (%d) exceeds the maximum number of tokens allowed (%d).","status":"INVALID_ARGUMENT"}}`, n, s.loop.Window)
		return
	}
	body, err := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"content": reply(req.Contents), "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": n, "candidatesTokenCount": 20, "totalTokenCount": n + 20},
		"modelVersion":  loopModel,
	})
	if err != nil {
		s.problem("reply does not encode: %v", err)
	}
	if streamed { // the whole reply in one chunk, as the API's last chunk carries the usage
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\r\n\r\n", body)
		return
	}
	w.Write(body)
}

// hasText reports whether a user content of contents has a text part with
// exactly text.
func hasText(contents []*genai.Content, text string) bool {
	for _, c := range contents {
		if c.Role != genai.RoleUser {
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

// The script. Turn t has steps(t) tool steps, then a final answer; step s
// of turn t calls one tool, or two in parallel, with ids "t<t>s<s>a" and
// "t<t>s<s>b". The server reads where the conversation is from the last
// content of the request, which every trim keeps: a task opens a turn, the
// responses to step s call for step s+1.

func steps(turn int) int { return 1 + int(mix(uint64(turn)*7919)%6) }

func taskText(turn int) string {
	return "Task " + strconv.Itoa(turn) + ": look into module " + strconv.Itoa(turn*13%97) + " and fix what you find."
}

// reply returns the model's reply to a request whose contents are contents.
func reply(contents []*genai.Content) *genai.Content {
	last := contents[len(contents)-1]
	turn, step := -1, 0
	for _, p := range last.Parts {
		if fr := p.FunctionResponse; fr != nil {
			fmt.Sscanf(fr.ID, "t%ds%d", &turn, &step)
		}
		if strings.HasPrefix(p.Text, "Task ") {
			fmt.Sscanf(p.Text, "Task %d:", &turn)
		}
	}
	if turn < 0 || step >= steps(turn) {
		return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "Done: the module builds and its tests pass."}}}
	}
	step++
	parts := []*genai.Part{{Text: "Step " + strconv.Itoa(step) + ": reading what I need."}}
	n := 1 + int(mix(uint64(turn*31+step))%4/3) // a quarter of the steps make two calls
	for k := range n {
		tool := int(mix(uint64(turn*131+step*17+k)) % loopTools)
		id := fmt.Sprintf("t%ds%d%c", turn, step, 'a'+k)
		parts = append(parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: toolName(tool),
			Args: map[string]any{"path": "src/module" + strconv.Itoa(turn) + "/file" + strconv.Itoa(step) + ".go", "limit": 400}}})
	}
	return &genai.Content{Role: genai.RoleModel, Parts: parts}
}

// mix is splitmix64's finaliser: a deterministic pseudo-random number.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func toolName(i int) string { return fmt.Sprintf("tool_%02d", i) }

// loopTools returns the 20 function declarations sent with every request.
func loopToolDecls() []*genai.Tool {
	decls := make([]*genai.FunctionDeclaration, loopTools)
	for i := range decls {
		decls[i] = &genai.FunctionDeclaration{
			Name: toolName(i),
			Description: "Tool " + strconv.Itoa(i) + " reads a file of the workspace, or a part of it, and returns its lines " +
				"with their numbers; use it before editing, and again after an edit to check the result.",
			Parameters: &genai.Schema{
				Type: genai.TypeObject,
				Properties: map[string]*genai.Schema{
					"path":   {Type: genai.TypeString, Description: "Path of the file, relative to the workspace root."},
					"offset": {Type: genai.TypeInteger, Description: "First line to read, from 1."},
					"limit":  {Type: genai.TypeInteger, Description: "Number of lines to read at most."},
				},
				Required: []string{"path"},
			},
		}
	}
	return []*genai.Tool{{FunctionDeclarations: decls}}
}

var loopWords = strings.Fields(`func return if err != nil { } package import the value of a
	slice map string int error context handler request response buffer index length
	count token budget message content part call result => := ( ) [ ] // TODO fix
	check test assert want got t.Fatalf 0 1 42 1024 "ok" "failed" nil`)

// toolOutput is the deterministic output of call id: words(h) words for a
// hash h of the id.
func toolOutput(id string, words func(h uint64) int) string {
	h := uint64(14695981039346656037)
	for i := range len(id) {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	n := words(mix(h))
	var b strings.Builder
	for i := range n {
		h = mix(h)
		b.WriteString(loopWords[h%uint64(len(loopWords))])
		if i%12 == 11 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// loopStats are the figures of one run of the loop besides what its
// adaptertest.Loop counts.
type loopStats struct {
	retried2 int // requests that needed a second retry
	// estErr[n] is the calibration's relative error on the request sent
	// after n observations: |predicted - reported| / reported.
	estErr map[int]float64
	// afterFirst counts the rejections after the first recovery.
	afterFirst int
}

// runLoop runs the agent loop for l.Turns turns against a server that
// counts and checks each request through l (l.Window its window), with
// the budget at l.Budget, with a calibration or without. Errors that would reach the caller are
// recorded in l, and the loop goes on with the next turn; what else the
// server finds fails t. With stateful, it trims with one Trimmer
// (low-water mark 0.7 on top of the options) and recovers with it.
func runLoop(t *testing.T, l *adaptertest.Loop, calibrate, stateful bool) loopStats {
	t.Helper()
	srv := &loopServer{loop: l}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	config := &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText("You are a coding agent. Use the tools to read files before you answer.", genai.RoleUser),
		Tools:             loopToolDecls(),
	}
	cal := &history.Calibration{}
	opts := []history.Option{
		history.WithOverhead(Overhead(config, nil)),
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	var used *history.Calibration
	if calibrate {
		opts = append(opts, history.WithCalibration(cal))
		used = cal
	}
	budget := l.Budget
	trim := func(all []*genai.Content) ([]*genai.Content, history.Result, error) {
		return Trim(config.SystemInstruction, all, budget, opts...)
	}
	recover := func(_, sent []*genai.Content, err error, attempt int) ([]*genai.Content, history.Result, error) {
		return RecoverOverflow(config.SystemInstruction, sent, err, attempt, opts...)
	}
	if stateful {
		tr := NewTrimmer(config.SystemInstruction, append(opts, history.WithLowWater(0.7))...)
		trim = func(all []*genai.Content) ([]*genai.Content, history.Result, error) { return tr.Trim(all, budget) }
		recover = func(all, _ []*genai.Content, err error, attempt int) ([]*genai.Content, history.Result, error) {
			return tr.RecoverOverflow(all, err, attempt)
		}
	}
	st := loopStats{estErr: map[int]float64{}}
	recovered := false
	observed := 0
	var all []*genai.Content // the runtime's full transcript
	for turn := range l.Turns {
		text := taskText(turn)
		l.Turn(turn+1, text)
		all = append(all, genai.NewContentFromText(text, genai.RoleUser))
	steps:
		for {
			out, res, err := trim(all)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				l.Error(fmt.Errorf("Trim: %w", err))
				break
			}
			resp, err := client.Models.GenerateContent(ctx, loopModel, out, config)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				if !history.IsContextOverflow(err) {
					break
				}
				l.Rejected(attempt-1, res, used)
				if attempt == 2 {
					st.retried2++
				}
				if recovered {
					st.afterFirst++
				}
				recovered = true
				var rerr error
				if out, res, rerr = recover(all, out, err, attempt); rerr != nil {
					l.Error(fmt.Errorf("RecoverOverflow attempt %d: %w", attempt, rerr))
					break steps
				}
				resp, err = client.Models.GenerateContent(ctx, loopModel, out, config)
			}
			if err != nil {
				l.Error(err)
				break
			}
			reported := int(resp.UsageMetadata.PromptTokenCount)
			if scale, overhead, _, ok := cal.Model(); ok && (observed == 1 || observed == 3 || observed == 10) {
				if _, done := st.estErr[observed]; !done {
					predicted := scale*float64(res.TokensAfter) + overhead
					st.estErr[observed] = math.Abs(predicted-float64(reported)) / float64(reported)
				}
			}
			cal.Observe(res.TokensAfter, reported)
			observed++
			l.Accepted(res.Trimmed, reported)
			answer := resp.Candidates[0].Content
			all = append(all, answer)
			var results []*genai.Part
			for _, p := range answer.Parts {
				if fc := p.FunctionCall; fc != nil {
					results = append(results, &genai.Part{FunctionResponse: &genai.FunctionResponse{
						ID: fc.ID, Name: fc.Name, Response: map[string]any{"output": toolOutput(fc.ID, l.Words)}}})
				}
			}
			if results == nil {
				break
			}
			all = append(all, &genai.Content{Role: genai.RoleUser, Parts: results})
		}
	}
	for _, p := range srv.problems {
		t.Error("server: " + p)
	}
	return st
}

// TestAgentLoop runs 50 turns of an agent through the real client against
// a server that counts 1.3 and 0.8 times the library's estimate, with the
// budget set to the server's limit: the calibration learns the difference,
// so that at most one request overflows, the recovery fixes it, no error
// reaches the caller, and the trimmed requests still fill the window.
func TestAgentLoop(t *testing.T) {
	for _, f := range []float64{1.3, 0.8} {
		t.Run("F="+strconv.FormatFloat(f, 'f', -1, 64), func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("gemini", adaptertest.Skew(f), loopLimit).RaceShort()
			l.MinWords, l.MaxWords = 250, 1150
			st := runLoop(t, l, true, false)
			ls := l.Stats()
			t.Logf("F=%.1f: %d requests, %d trimmed, %d overflows, mean provider prompt of trimmed requests %.1f%% of the limit; "+
				"estimate error after 1/3/10 observations: %.1f%% / %.1f%% / %.1f%%",
				f, ls.Requests, ls.Trimmed, ls.Overflows, 100*ls.Fill(), 100*st.estErr[1], 100*st.estErr[3], 100*st.estErr[10])
			l.Check(t) // at most 1 overflow, no error, no violation, fill >= 85%
			if len(st.estErr) != 3 {
				t.Errorf("estimate errors measured after %v observations, want 1, 3 and 10", st.estErr)
			}
			if st.estErr[10] > 0.1 {
				t.Errorf("after 10 observations the calibration is still %.1f%% off", 100*st.estErr[10])
			}
		})
	}
}

// TestAgentLoopRecovers: without a calibration, a server that counts 1.3
// times the library's estimate rejects every request trimmed to its limit,
// and RecoverOverflow makes each one fit on the first or second retry.
func TestAgentLoopRecovers(t *testing.T) {
	t.Parallel()
	l := adaptertest.NewLoop("gemini", adaptertest.Skew(1.3), loopLimit)
	l.Turns, l.MinWords, l.MaxWords = 8, 250, 1150
	st := runLoop(t, l, false, false)
	ls := l.Stats()
	if ls.Overflows < ls.Trimmed/2 {
		t.Errorf("%d overflows for %d trimmed requests: the loop does not exercise the recovery", ls.Overflows, ls.Trimmed)
	}
	if ls.Errors != 0 || ls.Violations != 0 || ls.Missing != 0 {
		t.Errorf("%d errors, %d pairing violations, %d requests without the task\n%s", ls.Errors, ls.Violations, ls.Missing, strings.Join(l.Notes(), "\n"))
	}
	t.Logf("without calibration: %d requests, %d trimmed, %d overflows, %d needing a second retry, all recovered",
		ls.Requests, ls.Trimmed, ls.Overflows, st.retried2)
}

// TestLoopServerPairing: the loop server's own reading of Gemini's rule,
// on which the matrix counts pairing violations.
func TestLoopServerPairing(t *testing.T) {
	user := genai.NewContentFromText("Task 1: go", genai.RoleUser)
	call := func(ids ...string) *genai.Content {
		c := &genai.Content{Role: genai.RoleModel}
		for _, id := range ids {
			c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: "tool_00"}})
		}
		return c
	}
	resp := func(ids ...string) *genai.Content {
		c := &genai.Content{Role: genai.RoleUser}
		for _, id := range ids {
			c.Parts = append(c.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: "tool_00"}})
		}
		return c
	}
	for _, tc := range []struct {
		contents []*genai.Content
		want     string
		reason   string
	}{
		{[]*genai.Content{user, call("a", "b"), resp("b", "a")}, "", "parallel calls answered in any order"},
		{[]*genai.Content{user, resp("a")}, geminiOrderBody, "a response after no call"},
		{[]*genai.Content{user, call("a", "b"), resp("a")}, geminiCountBody, "a call left unanswered"},
		{[]*genai.Content{user, call("a"), resp("a", "b")}, geminiCountBody, "a response too many"},
		{[]*genai.Content{user, call("a")}, geminiCountBody, "calls at the end"},
		{[]*genai.Content{user, call("a"), user}, geminiCountBody, "calls followed by a text"},
	} {
		if got := pairing(tc.contents); got != tc.want {
			t.Errorf("pairing = %q, want %q (%s)", got, tc.want, tc.reason)
		}
	}
}

// TestStatefulLoop runs the loop with the Trimmer against a provider
// counting 1.3 times the library's estimate, with and without a
// Calibration, at a budget of the window and of 1.25 times it (issues 23
// and 33: at most 1 rejection after the first recovery).
func TestStatefulLoop(t *testing.T) {
	adaptertest.StatefulLoops(t, "gemini", loopLimit, func(t *testing.T, l *adaptertest.Loop, calibrate bool) {
		runLoop(t, l, calibrate, true)
	})
}
