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
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	"google.golang.org/genai"
)

const (
	loopLimit = 8000 // the provider's window, and the budget a runtime configures
	loopTurns = 50
	loopTools = 20
	loopModel = "gemini-2.5-flash"
)

// loopServer answers generateContent requests as the Gemini API does: a
// scripted reply with usageMetadata.promptTokenCount, or, when its count of
// the request exceeds limit, the API's HTTP 400 INVALID_ARGUMENT overflow.
// It counts a request as ceil(f × the library's estimate of its contents
// and system instruction) plus EstimateText of the tools JSON it received,
// and checks every request it receives.
type loopServer struct {
	f     float64
	limit int

	mu       sync.Mutex
	task     string   // the text of the latest user task the client sent
	problems []string // what the checks of the requests found
}

// wireRequest is the body of a generateContent request, decoded into the SDK's
// own types.
type wireRequest struct {
	Contents          []*genai.Content `json:"contents"`
	SystemInstruction *genai.Content   `json:"systemInstruction"`
	Tools             json.RawMessage  `json:"tools"`
}

func (s *loopServer) setTask(task string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.task = task
}

func (s *loopServer) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// count returns the provider's count of req.
func (s *loopServer) count(req *wireRequest) (int, error) {
	hist, err := ToHistory(req.Contents)
	if err != nil {
		return 0, err
	}
	if req.SystemInstruction != nil {
		sys, err := ToHistory([]*genai.Content{{Role: genai.RoleUser, Parts: req.SystemInstruction.Parts}})
		if err != nil {
			return 0, err
		}
		sys[0].Role = history.RoleSystem
		hist = append(sys, hist...)
	}
	if _, rep := history.SweepOrphans(hist); rep.Total() > 0 {
		s.problem("request with %d orphans (%+v)", rep.Total(), rep)
	}
	return int(math.Ceil(s.f*float64(history.Estimate(hist, nil)))) + history.EstimateText(string(req.Tools)), nil
}

func (s *loopServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1beta/models/"+loopModel+":generateContent" {
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
	if err := Validate(req.Contents); err != nil {
		s.problem("invalid request: %v", err)
	}
	s.mu.Lock()
	task := s.task
	s.mu.Unlock()
	if !hasText(req.Contents, task) {
		s.problem("request without the latest task %q", task)
	}
	if len(req.Tools) == 0 {
		s.problem("request without tools")
	}
	n, err := s.count(&req)
	if err != nil {
		s.problem("request does not convert: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if n > s.limit {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"code":400,"message":"The input token count (%d) exceeds the maximum number of tokens allowed (%d).","status":"INVALID_ARGUMENT"}}`, n, s.limit)
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

// toolOutput is the deterministic output of call id: 250 to 1,150 words.
func toolOutput(id string) string {
	h := uint64(14695981039346656037)
	for i := range len(id) {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	n := 250 + int(mix(h)%901)
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

// loopStats are the figures of one run of the loop.
type loopStats struct {
	requests, trimmed, overflows int
	retried2                     int // requests that needed a second retry
	trimmedPrompt                int // sum of the provider's counts of the trimmed requests
	// estErr[n] is the calibration's relative error on the request sent
	// after n observations: |predicted - reported| / reported.
	estErr map[int]float64
}

// runLoop runs the agent loop for turns turns with a server counting f
// times the library's estimate, with a calibration or without, and fails t
// on anything that reaches the caller.
func runLoop(t *testing.T, f float64, turns int, calibrate bool) loopStats {
	t.Helper()
	srv := &loopServer{f: f, limit: loopLimit}
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
	if calibrate {
		opts = append(opts, history.WithCalibration(cal))
	}
	st := loopStats{estErr: map[int]float64{}}
	observed := 0
	var all []*genai.Content // the runtime's full transcript
	send := func(out []*genai.Content, task *genai.Content) (*genai.GenerateContentResponse, error) {
		t.Helper()
		if err := Validate(out); err != nil {
			t.Fatalf("request %d fails Validate: %v", st.requests, err)
		}
		if !hasContent(out, task) {
			t.Fatalf("request %d does not send the latest task", st.requests)
		}
		st.requests++
		return client.Models.GenerateContent(ctx, loopModel, out, config)
	}
	for turn := range turns {
		task := genai.NewContentFromText(taskText(turn), genai.RoleUser)
		all = append(all, task)
		srv.setTask(taskText(turn))
		for {
			out, res, err := Trim(config.SystemInstruction, all, loopLimit, opts...)
			if err != nil {
				t.Fatalf("turn %d: Trim: %v", turn, err)
			}
			resp, err := send(out, task)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				if !history.IsContextOverflow(err) {
					break
				}
				st.overflows++
				if attempt == 2 {
					st.retried2++
				}
				var rerr error
				if out, res, rerr = RecoverOverflow(config.SystemInstruction, out, err, attempt, opts...); rerr != nil {
					t.Fatalf("turn %d: RecoverOverflow attempt %d: %v", turn, attempt, rerr)
				}
				resp, err = send(out, task)
			}
			if err != nil {
				t.Fatalf("turn %d: the request failed: %v", turn, err)
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
			if res.Trimmed {
				st.trimmed++
				st.trimmedPrompt += reported
			}
			answer := resp.Candidates[0].Content
			all = append(all, answer)
			var results []*genai.Part
			for _, p := range answer.Parts {
				if fc := p.FunctionCall; fc != nil {
					results = append(results, &genai.Part{FunctionResponse: &genai.FunctionResponse{
						ID: fc.ID, Name: fc.Name, Response: map[string]any{"output": toolOutput(fc.ID)}}})
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

// hasContent reports whether c is one of contents, the very pointer.
func hasContent(contents []*genai.Content, c *genai.Content) bool {
	for _, x := range contents {
		if x == c {
			return true
		}
	}
	return false
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
			st := runLoop(t, f, loopTurns, true)
			if st.overflows > 1 {
				t.Errorf("%d overflows, want at most 1", st.overflows)
			}
			if st.trimmed == 0 {
				t.Fatalf("no request was trimmed in %d requests: the loop does not exercise the budget", st.requests)
			}
			mean := float64(st.trimmedPrompt) / float64(st.trimmed) / loopLimit
			if mean < 0.85 {
				t.Errorf("trimmed requests use %.1f%% of the limit on average, want at least 85%%", 100*mean)
			}
			t.Logf("F=%.1f: %d requests, %d trimmed, %d overflows, mean provider prompt of trimmed requests %.1f%% of the limit; "+
				"estimate error after 1/3/10 observations: %.1f%% / %.1f%% / %.1f%%",
				f, st.requests, st.trimmed, st.overflows, 100*mean, 100*st.estErr[1], 100*st.estErr[3], 100*st.estErr[10])
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
	st := runLoop(t, 1.3, 8, false)
	if st.overflows < st.trimmed/2 {
		t.Errorf("%d overflows for %d trimmed requests: the loop does not exercise the recovery", st.overflows, st.trimmed)
	}
	t.Logf("without calibration: %d requests, %d trimmed, %d overflows, %d needing a second retry, all recovered",
		st.requests, st.trimmed, st.overflows, st.retried2)
}
