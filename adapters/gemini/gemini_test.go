package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/pins"
	"github.com/histrim/history/internal/race"
	"google.golang.org/genai"
)

func text(role, s string) *genai.Content {
	return &genai.Content{Role: role, Parts: []*genai.Part{{Text: s}}}
}

func call(id, name string, args map[string]any) *genai.Part {
	return &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: args}}
}

func resp(id, name string, out map[string]any) *genai.Part {
	return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: out}}
}

// rich is a conversation that uses every feature the adapter must carry:
// images, file data, thought parts with signatures, calls with and without
// ids (two parallel calls of the same name), responses out of order, text
// beside responses, part metadata and video metadata.
func rich(t testing.TB) []*genai.Content {
	big := strings.Repeat("the quick brown fox jumps over the lazy dog ", 40)
	return []*genai.Content{
		{Role: genai.RoleUser, Parts: []*genai.Part{
			{Text: "what is in this picture? " + big},
			{InlineData: &genai.Blob{MIMEType: "image/png", Data: adaptertest.PNG(t, 1024, 512), DisplayName: "shot.png"}},
			{FileData: &genai.FileData{FileURI: "gs://bucket/report.pdf", MIMEType: "application/pdf"},
				VideoMetadata: &genai.VideoMetadata{FPS: genai.Ptr(2.0)}},
		}},
		{Role: genai.RoleModel, Parts: []*genai.Part{
			{Text: "I should search twice.", Thought: true, ThoughtSignature: []byte("sig-1")},
			call("", "search", map[string]any{"q": "fox"}),
			call("", "search", map[string]any{"q": "dog"}),
			{FunctionCall: &genai.FunctionCall{ID: "fetch-1", Name: "fetch", Args: map[string]any{"url": "https://example.com"}},
				ThoughtSignature: []byte("sig-2")},
		}},
		{Role: genai.RoleUser, Parts: []*genai.Part{
			resp("fetch-1", "fetch", map[string]any{"body": big}),
			{Text: "(results follow)", PartMetadata: map[string]any{"source": "runtime"}},
			resp("", "search", map[string]any{"hits": 3}),
			resp("", "search", map[string]any{"hits": 5}),
		}},
		text(genai.RoleModel, "A fox and a dog. "+big),
		text("", "and the second picture? "+big),
		{Role: genai.RoleModel, Parts: []*genai.Part{
			{ExecutableCode: &genai.ExecutableCode{Code: "print(1)", Language: genai.LanguagePython}},
			{CodeExecutionResult: &genai.CodeExecutionResult{Outcome: genai.OutcomeOK, Output: "1"}},
			{Text: "It prints 1."},
		}},
		text(genai.RoleUser, "thanks"),
	}
}

func TestToHistory(t *testing.T) {
	msgs, err := ToHistory(rich(t))
	if err != nil {
		t.Fatal(err)
	}
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = string(m.Role) + "/" + string(m.Kind)
	}
	want := []string{"user/", "assistant/", "tool/", "user/nudge", "tool/", "tool/", "assistant/", "user/", "assistant/", "user/"}
	if !slices.Equal(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	img := msgs[0].Parts[0]
	if img.Type != history.PartImage || img.Width != 1024 || img.Height != 512 {
		t.Errorf("image part = %+v, want a 1024x512 image read from the PNG header", img)
	}
	if f := msgs[0].Parts[1]; f.Type != history.PartFile || f.MIMEType != "application/pdf" {
		t.Errorf("file part = %+v", f)
	}
	// The thought and both signatures count; as text, since the first call
	// of the content carries no signature (see TestThoughtsAsReasoning).
	a := msgs[1]
	wantParts := []history.Part{
		{Type: history.PartText, Text: "I should search twice."},
		{Type: history.PartText, Text: "c2lnLTE="}, // base64 of sig-1, as sent
		{Type: history.PartText, Text: "c2lnLTI="},
	}
	if !slices.Equal(a.Parts, wantParts) {
		t.Errorf("thought and signatures read as %+v, want %+v", a.Parts, wantParts)
	}
	gotCalls := []string{a.ToolCalls[0].ID, a.ToolCalls[1].ID, a.ToolCalls[2].ID}
	if !slices.Equal(gotCalls, []string{"#c1.1", "#c1.2", "fetch-1"}) {
		t.Errorf("call ids = %v: calls without an id must get synthetic ids", gotCalls)
	}
	if a.ToolCalls[0].Arguments != `{"q":"fox"}` {
		t.Errorf("arguments = %q", a.ToolCalls[0].Arguments)
	}
	// Responses pair by id, then by name in order.
	answers := []string{msgs[2].ToolCallID, msgs[4].ToolCallID, msgs[5].ToolCallID}
	if !slices.Equal(answers, []string{"fetch-1", "#c1.1", "#c1.2"}) {
		t.Errorf("response ids = %v", answers)
	}
	if msgs[4].Name != "search" || msgs[4].Content != `{"hits":3}` {
		t.Errorf("response = %+v", msgs[4])
	}
	if msgs[3].Content != "(results follow)" {
		t.Errorf("nudge = %+v", msgs[3])
	}
	if len(msgs[8].Parts) != 2 || msgs[8].Parts[0].Text != "print(1)" || msgs[8].Parts[1].Text != "1" {
		t.Errorf("code execution parts = %+v", msgs[8].Parts)
	}
	// The core accepts the conversion as it is: nothing to sweep.
	if out, rep := history.SweepOrphans(msgs); rep.Total() != 0 || len(out) != len(msgs) {
		t.Errorf("sweep of a well-paired conversion removed %+v", rep)
	}
}

func TestToHistoryErrors(t *testing.T) {
	cases := []struct {
		name, reason string
		in           []*genai.Content
	}{
		{"nil content", "a nil pointer cannot be converted", []*genai.Content{nil}},
		{"nil part", "a nil part cannot be converted", []*genai.Content{{Role: "user", Parts: []*genai.Part{nil}}}},
		{"unknown role", "Gemini roles are user and model only", []*genai.Content{text("system", "x")}},
		{"call from user", "only the model calls functions", []*genai.Content{{Role: "user", Parts: []*genai.Part{call("a", "f", nil)}}}},
		{"response from model", "only the user answers calls", []*genai.Content{{Role: "model", Parts: []*genai.Part{resp("a", "f", nil)}}}},
		{"bad args", "arguments must encode as JSON", []*genai.Content{{Role: "model", Parts: []*genai.Part{call("a", "f", map[string]any{"x": make(chan int)})}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ToHistory(c.in); !errors.Is(err, ErrInvalidContent) || !strings.HasPrefix(err.Error(), "history/gemini: ") {
				t.Errorf("ToHistory: err = %v, want ErrInvalidContent (%s)", err, c.reason)
			}
			if _, _, err := Trim(nil, c.in, 100); !errors.Is(err, ErrInvalidContent) {
				t.Errorf("Trim: err = %v, want ErrInvalidContent (%s)", err, c.reason)
			}
		})
	}
	if _, _, err := Trim(text("user", "sys"), nil, 0); !errors.Is(err, history.ErrInvalidBudget) {
		t.Errorf("budget 0: err = %v, want history.ErrInvalidBudget", err)
	}
	if _, _, err := Trim(&genai.Content{Parts: []*genai.Part{resp("a", "f", nil)}}, nil, 10); !errors.Is(err, ErrInvalidContent) {
		t.Errorf("system with a function response: err = %v, want ErrInvalidContent", err)
	}
}

// TestTrimRoundTrip checks that what Trim returns is the caller's own
// contents, byte for byte in JSON and pointer for pointer, at a budget that
// keeps everything and at one that drops the first turns.
func TestTrimRoundTrip(t *testing.T) {
	in := rich(t)
	before := adaptertest.JSON(t, in)
	sys := text("", "You are terse.")

	out, res, err := Trim(sys, in, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if !adaptertest.Identity(res.Kept, len(res.Messages)) || len(out) != len(in) || &out[0] != &in[0] || cap(out) != len(in) {
		t.Fatalf("a fitting history must come back as the caller's slice, clipped (Kept %v)", res.Kept)
	}
	if adaptertest.JSON(t, out) != before {
		t.Fatal("JSON of the untouched result differs from the input")
	}

	// Drop the first turn: keep "and the second picture?" onwards.
	all, _ := ToHistory(in)
	sysTok := history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: "You are terse."})
	budget := sysTok + history.Estimate(append([]history.Message{history.Breadcrumb()}, all[7:]...), nil)
	out, res, err = Trim(sys, in, budget)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Trimmed || res.DroppedTurns != 1 || res.KeptTurns != 2 || res.DroppedMessages != 7 {
		t.Fatalf("dropped %d turns (%d messages), kept %d; want 1 turn (7 messages) dropped and 2 kept",
			res.DroppedTurns, res.DroppedMessages, res.KeptTurns)
	}
	if len(out) != 4 || out[1] != in[4] || out[2] != in[5] || out[3] != in[6] {
		t.Fatalf("kept contents are not the caller's pointers: %v", out)
	}
	if got, want := adaptertest.JSON(t, out[1:]), adaptertest.JSON(t, in[4:]); got != want {
		t.Errorf("kept contents changed:\n got %s\nwant %s", got, want)
	}
	if got := adaptertest.JSON(t, out[0]); got != `{"parts":[{"text":"[earlier turns omitted to fit the context window]"}],"role":"user"}` {
		t.Errorf("breadcrumb = %s", got)
	}
	if !slices.Equal(res.Kept, []int{-1, 7, 8, 9}) || len(res.Messages) != len(out) {
		t.Errorf("Kept = %v (Messages %d), want indices into ToHistory(contents)", res.Kept, len(res.Messages))
	}
	if res.TokensAfter != budget {
		t.Errorf("TokensAfter = %d, want %d (system instruction included)", res.TokensAfter, budget)
	}
	if adaptertest.JSON(t, in) != before {
		t.Error("Trim modified the caller's contents")
	}
}

// TestTrimCutsDown covers the orphan sweep: unanswered calls are stripped
// from a kept model content and responses that answer nothing are removed
// from a user content holding several, while the caller's contents stay as
// they were and every remaining part is the caller's pointer.
func TestTrimCutsDown(t *testing.T) {
	model := &genai.Content{Role: "model", Parts: []*genai.Part{
		{Text: "checking", Thought: true},
		{FunctionCall: &genai.FunctionCall{ID: "a", Name: "f", Args: map[string]any{"n": 1}}, ThoughtSignature: []byte("s")},
		call("b", "g", nil),
		call("", "h", nil),
	}}
	answers := &genai.Content{Role: "user", Parts: []*genai.Part{
		resp("a", "f", map[string]any{"ok": true}),
		resp("zzz", "nope", nil), // answers nothing
		resp("", "h", nil),
	}}
	in := []*genai.Content{text("user", "go"), model, answers, text("model", "done")}
	before := adaptertest.JSON(t, in)

	out, res, err := Trim(nil, in, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if res.OrphansRemoved != 2 || res.Trimmed {
		t.Fatalf("res = %+v, want 2 orphans (call b, response zzz) removed and no trim", res)
	}
	if err := Validate(out); err != nil {
		t.Fatalf("swept output does not validate: %v", err)
	}
	if out[0] != in[0] || out[3] != in[3] {
		t.Error("untouched contents must be the caller's pointers")
	}
	if out[1] == model || !slices.Equal(out[1].Parts, []*genai.Part{model.Parts[0], model.Parts[1], model.Parts[3]}) || out[1].Role != "model" {
		t.Errorf("model content = %s, want a new content without call b over the caller's parts", adaptertest.JSON(t, out[1]))
	}
	if out[2] == answers || !slices.Equal(out[2].Parts, []*genai.Part{answers.Parts[0], answers.Parts[2]}) {
		t.Errorf("answers = %s, want the two real responses", adaptertest.JSON(t, out[2]))
	}
	if adaptertest.JSON(t, in) != before || len(model.Parts) != 4 || len(answers.Parts) != 3 {
		t.Error("Trim modified the caller's contents")
	}
	if len(res.Messages[1].ToolCalls) != 2 {
		t.Errorf("Result.Messages[1] = %+v, want the stripped message", res.Messages[1])
	}
}

func TestTrimAllCallsUnanswered(t *testing.T) {
	in := []*genai.Content{
		text("user", "go"),
		{Role: "model", Parts: []*genai.Part{call("a", "f", nil)}},
		text("user", "never mind"),
	}
	out, res, err := Trim(nil, in, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0] != in[0] || out[1] != in[2] || res.OrphansRemoved != 1 {
		t.Errorf("out = %s, want the model content with only an unanswered call gone", adaptertest.JSON(t, out))
	}
}

// TestTrimBreadcrumbRole: a notice is a user content whatever its role, so
// that a trimmed history starts with a user turn; a model-role notice an
// earlier version left at the front is still recognised and replaced.
func TestTrimBreadcrumbRole(t *testing.T) {
	in := rich(t)
	crumb := history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "(older turns left out)"})
	out, _, err := Trim(nil, in, 400, crumb)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatal(err)
	}
	if got := adaptertest.JSON(t, out[0]); got != `{"parts":[{"text":"(older turns left out)"}],"role":"user"}` {
		t.Errorf("breadcrumb = %s", got)
	}
	old := slices.Concat([]*genai.Content{text("model", "(older turns left out)")}, out[1:])
	if _, res, _ := Trim(nil, old, 1<<20, crumb); res.KeptTurns != 2 {
		t.Errorf("the old notice counts as a turn: %d kept", res.KeptTurns)
	}
	again, res, err := Trim(nil, old, 100, crumb)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatal(err)
	}
	if again[0].Role != genai.RoleUser || again[1] != old[len(old)-1] || res.DroppedTurns != 1 {
		t.Errorf("model-role notice not replaced: %s (dropped %d turns)", adaptertest.JSON(t, again), res.DroppedTurns)
	}
}

func TestTrimOverBudget(t *testing.T) {
	in := rich(t)
	out, res, err := Trim(nil, in, 5)
	var be *history.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("err = %v, want a *history.BudgetError", err)
	}
	if len(out) != 2 || out[1] != in[6] || res.KeptTurns != 1 {
		t.Errorf("out = %s, want breadcrumb and latest turn", adaptertest.JSON(t, out))
	}
}

// TestValidateNoContents: a request without contents is refused by
// Gemini ("contents is not specified"), and by Validate (it passed).
func TestValidateNoContents(t *testing.T) {
	for _, in := range [][]*genai.Content{nil, {}} {
		if err := Validate(in); !errors.Is(err, ErrNoContents) {
			t.Errorf("Validate(%#v) = %v, want ErrNoContents", in, err)
		}
	}
	if err := Validate([]*genai.Content{text("user", "hi")}); err != nil {
		t.Errorf("one user content: %v", err)
	}
}

func TestValidate(t *testing.T) {
	u := func(s string) *genai.Content { return text("user", s) }
	m := func(parts ...*genai.Part) *genai.Content { return &genai.Content{Role: "model", Parts: parts} }
	r := func(parts ...*genai.Part) *genai.Content { return &genai.Content{Role: "user", Parts: parts} }
	cases := []struct {
		name   string
		in     []*genai.Content
		bad    int // index of the violation, -1 for none
		reason string
	}{
		{"plain chat", []*genai.Content{u("hi"), text("model", "hello"), u("bye")}, -1, "no calls"},
		{"ids", []*genai.Content{u("x"), m(call("1", "f", nil), call("2", "f", nil)), r(resp("2", "f", nil), resp("1", "f", nil))}, -1, "ids pair in any order"},
		{"names", []*genai.Content{u("x"), m(call("", "f", nil), call("", "g", nil)), r(resp("", "g", nil), resp("", "f", nil))}, -1, "names pair without ids"},
		{"response text beside", []*genai.Content{u("x"), m(call("", "f", nil)), r(&genai.Part{Text: "note"}, resp("", "f", nil))}, -1, "other parts may accompany responses"},
		{"default role", []*genai.Content{{Parts: []*genai.Part{{Text: "x"}}}, m(call("", "f", nil)), {Parts: []*genai.Part{resp("", "f", nil)}}}, -1, "an empty role is user"},
		{"call first", []*genai.Content{m(call("", "f", nil)), r(resp("", "f", nil))}, 0, "a call turn must follow a user turn"},
		{"call after model", []*genai.Content{u("x"), text("model", "hm"), m(call("", "f", nil)), r(resp("", "f", nil))}, 2, "a call turn must follow a user turn"},
		{"trailing call", []*genai.Content{u("x"), m(call("", "f", nil))}, 1, "a call needs a response turn"},
		{"missing response", []*genai.Content{u("x"), m(call("", "f", nil), call("", "g", nil)), r(resp("", "f", nil))}, 1, "counts must match"},
		{"extra response", []*genai.Content{u("x"), m(call("", "f", nil)), r(resp("", "f", nil), resp("", "f", nil))}, 2, "a call is answered once"},
		{"wrong id", []*genai.Content{u("x"), m(call("1", "f", nil)), r(resp("2", "f", nil))}, 2, "an id call needs its id or... no name fallback to id calls"},
		{"late response", []*genai.Content{u("x"), m(call("", "f", nil)), r(resp("", "f", nil)), r(resp("", "f", nil))}, 3, "responses must follow their call turn"},
		{"response not next", []*genai.Content{u("x"), m(call("", "f", nil)), u("y"), r(resp("", "f", nil))}, 1, "the next content must answer"},
		{"call in user", []*genai.Content{r(call("", "f", nil))}, 0, "users do not call"},
		{"response in model", []*genai.Content{u("x"), m(resp("", "f", nil))}, 1, "models do not answer"},
	}
	where := func(e *PairingError) (int, string) { return e.Index, "" }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			adaptertest.Violation(t, Validate(c.in), ErrUnpaired, where, c.bad, "", c.reason)
		})
	}
	if err := Validate([]*genai.Content{text("tool", "x")}); !errors.Is(err, ErrInvalidContent) {
		t.Errorf("unknown role: %v", err)
	}
}

// checkTrim trims in at budget and checks the invariants: the output
// validates, the input is untouched, and every content is the breadcrumb,
// one of the caller's pointers, or a new content over a subsequence of one
// caller content's part pointers, in input order.
func checkTrim(t *testing.T, sys *genai.Content, in []*genai.Content, budget int) {
	t.Helper()
	r, res, err := adapter.Trimmed(t, request{sys, in}, budget)
	out := r.Contents
	if err == nil && res.TokensAfter > budget {
		t.Fatalf("budget %d: TokensAfter %d without an error", budget, res.TokensAfter)
	}
	next := 0 // input contents before next are used up
	for j, c := range out {
		if j == 0 && slices.Contains(res.Kept, -1) {
			if j != 0 || len(c.Parts) != 1 {
				t.Fatalf("budget %d: breadcrumb at %d: %s", budget, j, adaptertest.JSON(t, c))
			}
			continue
		}
		found := false
		for i := next; i < len(in) && !found; i++ {
			if c == in[i] || (c.Role == in[i].Role && adaptertest.Subsequence(c.Parts, in[i].Parts, adaptertest.Same[*genai.Part])) {
				found, next = true, i+1
			}
		}
		if !found {
			t.Fatalf("budget %d: content %d is not the caller's: %s", budget, j, adaptertest.JSON(t, c))
		}
	}
}

func TestTrimEveryBudget(t *testing.T) {
	in := rich(t)
	sys := text("", "You are terse.")
	_, res, err := Trim(sys, in, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	total := res.TokensBefore
	for budget := 1; budget <= total+50; budget += 7 {
		checkTrim(t, sys, in, budget)
		checkTrim(t, nil, in, budget)
	}
}

// gen builds a conversation from fuzz input: turns of a user prompt, tool
// rounds of parallel calls (with and without ids, repeated names) answered
// in a shuffled order, sometimes with an answer missing, an orphan answer or
// a wrong id, and a closing model reply.
func gen(data []byte) []*genai.Content {
	seed := adaptertest.Bytes(data)
	next := seed.Byte
	var out []*genai.Content
	names := []string{"f", "g", "f"}
	for turn := 0; len(seed) > 0 && turn < 12; turn++ {
		out = append(out, text("user", strings.Repeat("prompt ", 1+next()%40)))
		for round := next() % 3; round > 0; round-- {
			n := 1 + next()%3
			m := &genai.Content{Role: "model"}
			if next()%2 == 0 {
				m.Parts = append(m.Parts, &genai.Part{Text: "thinking", Thought: true, ThoughtSignature: []byte{byte(turn)}})
			}
			var rs []*genai.Part
			for k := range n {
				id := ""
				if next()%2 == 0 {
					id = string(rune('a'+turn)) + string(rune('0'+k))
				}
				name := names[next()%len(names)]
				c := call(id, name, map[string]any{"k": k})
				if k == 0 { // Gemini 3 signs the first call of a step
					c.ThoughtSignature = []byte{'c', byte(turn), byte(round)}
				}
				m.Parts = append(m.Parts, c)
				rs = append(rs, resp(id, name, map[string]any{"out": strings.Repeat("x", next())}))
			}
			// Defects the orphan sweep can repair, only in the last round
			// so that no call turn follows a model turn (which Gemini
			// rejects and no sweep can fix).
			switch d := next() % 8; {
			case round > 1:
			case d == 0:
				rs = rs[1:] // one call unanswered
			case d == 1:
				rs = append(rs, resp("", "orphan", nil))
			case d == 2:
				rs[0] = resp("wrong", rs[0].FunctionResponse.Name, nil)
			}
			if len(rs) > 1 && next()%2 == 0 {
				rs[0], rs[len(rs)-1] = rs[len(rs)-1], rs[0]
			}
			if next()%4 == 0 {
				rs = append(rs, &genai.Part{Text: "note"})
			}
			out = append(out, m)
			if len(rs) > 0 {
				out = append(out, &genai.Content{Role: "user", Parts: rs})
			}
		}
		out = append(out, text("model", strings.Repeat("answer ", 1+next()%40)))
	}
	return out
}

func FuzzTrim(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint16(200))
	f.Add([]byte{0, 1, 2, 0, 1, 0, 2, 1, 0, 0, 5, 3, 2, 1, 0, 0, 9, 1, 2, 2, 2, 2}, uint16(60))
	f.Add(bytes.Repeat([]byte{7, 2, 1, 0}, 30), uint16(500))
	f.Fuzz(func(t *testing.T, data []byte, budget uint16) {
		in := gen(data)
		checkTrim(t, nil, in, int(budget)+1)
		checkTrim(t, text("", "sys"), in, int(budget)+1)
	})
}

// overheadConfig returns a config with a tool set, a response schema and a
// JSON response schema, each when asked for.
func overheadConfig(tools, schema, jsonSchema bool) *genai.GenerateContentConfig {
	c := &genai.GenerateContentConfig{SystemInstruction: text("", "You are a weather bot. "+strings.Repeat("Be precise. ", 20))}
	if tools {
		c.Tools = []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
			Name: "weather", Description: "Returns the weather of a city.",
			Parameters: &genai.Schema{Type: genai.TypeObject, Required: []string{"city"},
				Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString, Description: "The city's name."}}},
		}}}, {GoogleSearch: &genai.GoogleSearch{}}}
	}
	if schema {
		c.ResponseMIMEType = "application/json"
		c.ResponseSchema = &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{"temp_c": {Type: genai.TypeNumber}}}
	}
	if jsonSchema {
		c.ResponseMIMEType = "application/json"
		c.ResponseJsonSchema = map[string]any{"type": "object", "properties": map[string]any{"summary": map[string]any{"type": "string"}}}
	}
	return c
}

// TestOverhead: Overhead counts, as one system message, the JSON of the
// tools and response schemas the request sends, exactly as the client sends
// them, and nothing else (not the system instruction, which Trim counts).
func TestOverhead(t *testing.T) {
	unencodable := overheadConfig(true, false, false)
	unencodable.ResponseJsonSchema = map[string]any{"bad": make(chan int)}
	cases := []struct {
		name   string
		config *genai.GenerateContentConfig
		keys   []string // the members of the counted object; none: Overhead is 0
	}{
		{name: "nil config"},
		{name: "system instruction only", config: overheadConfig(false, false, false)},
		{name: "tools", config: overheadConfig(true, false, false), keys: []string{"tools"}},
		{name: "response schema", config: overheadConfig(false, true, false), keys: []string{"responseSchema"}},
		{name: "JSON response schema", config: overheadConfig(false, false, true), keys: []string{"responseJsonSchema"}},
		{name: "tools and both schemas", config: overheadConfig(true, true, true), keys: []string{"tools", "responseSchema", "responseJsonSchema"}},
		{name: "a schema that does not encode", config: unencodable, keys: []string{"tools"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var seen []history.Message
			spy := history.CounterFunc(func(m history.Message) int { seen = append(seen, m); return 1000 + len(m.Content) })
			got := Overhead(tc.config, spy)
			if len(tc.keys) == 0 {
				if got != 0 || len(seen) != 0 {
					t.Fatalf("Overhead = %d after counting %d messages, want 0 and none", got, len(seen))
				}
				return
			}
			if len(seen) != 1 || seen[0].Role != history.RoleSystem || got != 1000+len(seen[0].Content) {
				t.Fatalf("Overhead = %d from %d messages %+v; want the count of one system message", got, len(seen), seen)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(seen[0].Content), &obj); err != nil {
				t.Fatalf("counted %q, not a JSON object: %v", seen[0].Content, err)
			}
			if len(obj) != len(tc.keys) {
				t.Fatalf("counted the members %s, want %v", seen[0].Content, tc.keys)
			}
			sent := sentRequest(t, tc.config)
			for _, k := range tc.keys {
				if !sameJSON(t, obj[k], sent[k]) {
					t.Errorf("counted %s as %s, the client sends %s", k, obj[k], sent[k])
				}
			}
			if h := Overhead(tc.config, nil); h != history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: seen[0].Content}) {
				t.Errorf("Overhead with a nil Counter = %d, not Heuristic's count", h)
			}
		})
	}
	neg := history.CounterFunc(func(history.Message) int { return -5 })
	if got := Overhead(overheadConfig(true, false, false), neg); got != 0 {
		t.Errorf("a negative count gives %d, want 0", got)
	}
}

// sentRequest returns what the real client sends for config on the Gemini
// API: the request's tools and the generation config's response schemas,
// as JSON, by the names Overhead counts them under.
func sentRequest(t *testing.T, config *genai.GenerateContentConfig) map[string]json.RawMessage {
	t.Helper()
	var body struct {
		Tools            json.RawMessage            `json:"tools"`
		GenerationConfig map[string]json.RawMessage `json:"generationConfig"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Error(err)
		}
		w.Write([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]}}]}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if config.ResponseJsonSchema != nil {
		if _, err := json.Marshal(config.ResponseJsonSchema); err != nil {
			c := *config
			c.ResponseJsonSchema = nil // the client could not send it either
			config = &c
		}
	}
	if _, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", []*genai.Content{text("user", "hi")}, config); err != nil {
		t.Fatal(err)
	}
	return map[string]json.RawMessage{"tools": body.Tools,
		"responseSchema": body.GenerationConfig["responseSchema"], "responseJsonSchema": body.GenerationConfig["responseJsonSchema"]}
}

// sameJSON reports whether a and b decode to the same value.
func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

// TestTrimWithOverhead: with WithOverhead(Overhead(config, nil)) the
// contents fit the budget together with the tools, and TokensAfter counts
// the whole request.
func TestTrimWithOverhead(t *testing.T) {
	config := overheadConfig(true, true, false)
	overhead := Overhead(config, nil)
	contents := recoverConv()
	all, _, _, _ := convertRequest(config.SystemInstruction, contents, nil, nil)
	budget := history.Estimate(all, nil) + 10 // fits without the overhead
	out, res, err := Trim(config.SystemInstruction, contents, budget)
	if err != nil || res.Trimmed || len(out) != len(contents) {
		t.Fatalf("without overhead: %d of %d contents, trimmed %v, %v", len(out), len(contents), res.Trimmed, err)
	}
	out, res, err = Trim(config.SystemInstruction, contents, budget, history.WithOverhead(overhead))
	if err != nil || !res.Trimmed {
		t.Fatalf("with an overhead of %d: trimmed %v, %v; want the contents trimmed to make room", overhead, res.Trimmed, err)
	}
	sent, _, _, _ := convertRequest(config.SystemInstruction, out, nil, nil)
	if got := history.Estimate(sent, nil) + overhead; got != res.TokensAfter || got > budget {
		t.Fatalf("request counts %d with its overhead, TokensAfter %d, budget %d", got, res.TokensAfter, budget)
	}
}

// pinConv is a conversation whose contents convert to one message each,
// to several messages (responses beside text), or to a message with calls:
//
//	0 user task          -> message 0
//	1 model, two calls   -> message 1
//	2 user, two responses and a text part -> messages 2, 3 (nudge), 4
//	3 model text         -> message 5
//	4 user task          -> message 6
//	5 model text         -> message 7
func pinConv() []*genai.Content {
	return []*genai.Content{
		text("user", "remember: the answer is 42"),
		{Role: "model", Parts: []*genai.Part{call("a", "read", nil), call("", "grep", nil)}},
		{Role: "user", Parts: []*genai.Part{resp("a", "read", map[string]any{"output": "x"}), {Text: "note"}, resp("", "grep", map[string]any{"output": "y"})}},
		text("model", "read and grepped"),
		text("user", "next task"),
		text("model", "done"),
	}
}

// TestPinTranslation: pins given as indices into contents reach the core
// as indices into the converted request, past a system instruction and
// the contents that convert to several messages; a content that cannot be
// pinned is refused with a *history.OptionError naming it.
func TestPinTranslation(t *testing.T) {
	sys := text("", "be brief")
	notice := append([]*genai.Content{text("user", history.BreadcrumbText)}, pinConv()...)
	cases := []struct {
		name     string
		system   *genai.Content
		contents []*genai.Content
		opts     []history.Option
		want     []int  // pins the core receives; nil: opts unchanged
		reason   string // the OptionError's reason, when refused
	}{
		{name: "no pins", contents: pinConv(), opts: []history.Option{history.WithStepTrim()}},
		{name: "one for one before the split", contents: pinConv(), opts: []history.Option{history.WithPin(0)}, want: []int{0}},
		{name: "after the split", contents: pinConv(), opts: []history.Option{history.WithPin(3, 4, 5)}, want: []int{5, 6, 7}},
		{name: "after a system instruction", system: sys, contents: pinConv(), opts: []history.Option{history.WithPin(0, 3)}, want: []int{1, 6}},
		{name: "the later WithPin wins", contents: pinConv(), opts: []history.Option{history.WithPin(1), history.WithPin(4)}, want: []int{6}},
		{name: "duplicates", contents: pinConv(), opts: []history.Option{history.WithPin(4, 0, 4)}, want: []int{0, 6}},
		{name: "function calls", contents: pinConv(), opts: []history.Option{history.WithPin(0, 1)},
			reason: "content 1 has tool calls; it cannot be kept without their results"},
		{name: "function responses", system: sys, contents: pinConv(), opts: []history.Option{history.WithPin(2)},
			reason: "content 2 is a tool result; it cannot be kept without its call"},
		{name: "outside", contents: pinConv(), opts: []history.Option{history.WithPin(6)},
			reason: "index 6 is outside the history of 6 contents"},
		{name: "a notice", contents: notice, opts: []history.Option{history.WithPin(0)},
			reason: "content 0 is a notice, which a trim replaces"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := codec.Convert(tc.system, tc.contents, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			all := v.Hist
			opts, err := codec.TranslatePins(v, tc.opts)
			if tc.reason != "" {
				var oe *history.OptionError
				if !errors.As(err, &oe) || !errors.Is(err, history.ErrInvalidOption) || oe.Option != "WithPin" || oe.Reason != tc.reason {
					t.Fatalf("err = %v, want a WithPin *history.OptionError: %s", err, tc.reason)
				}
				// Trim and RecoverOverflow return it, with nothing else.
				out, res, err := Trim(tc.system, tc.contents, 1000, tc.opts...)
				if !errors.As(err, &oe) || oe.Reason != tc.reason || out != nil || res.Messages != nil {
					t.Fatalf("Trim = %d contents, %d messages, %v; want none and the OptionError", len(out), len(res.Messages), err)
				}
				out, _, err = RecoverOverflow(tc.system, tc.contents, overflowErr(100, 50), 1, tc.opts...)
				if !errors.As(err, &oe) || oe.Reason != tc.reason || out != nil {
					t.Fatalf("RecoverOverflow = %d contents, %v; want none and the OptionError", len(out), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(opts) != len(tc.opts) {
					t.Fatalf("%d options, want the caller's %d", len(opts), len(tc.opts))
				}
				return
			}
			if got := pins.Read(opts); !slices.Equal(got, tc.want) {
				t.Fatalf("the core is given pins %v, want %v", got, tc.want)
			}
			for _, j := range tc.want {
				if m := all[j]; m.Role == history.RoleTool || len(m.ToolCalls) > 0 || m.Kind != "" {
					t.Fatalf("pin %d names %+v", j, m)
				}
			}
		})
	}
}

// TestPinSurvivesEveryBudget: a pinned content (a user task, a model note)
// is in the output, as the caller's very pointer, at every budget of the
// ladder's option sets and through RecoverOverflow, and the output stays
// valid.
func TestPinSurvivesEveryBudget(t *testing.T) {
	// Under the race detector, 5 of the 10 conversations (race.Sample):
	// the plain run sweeps all; the trims are single-goroutine logic.
	for _, seed := range race.Sample(adaptertest.Seeds(adaptertest.LadderSeeds, 6), 5) {
		for _, sys := range []*genai.Content{nil, text("", "You are an agent.")} {
			contents := genAgent(seed)
			pinned := pinnable(contents)
			if len(pinned) < 2 {
				continue
			}
			// The first pinnable content and one from the middle.
			pinned = []int{pinned[0], pinned[len(pinned)/2]}
			in := request{sys, contents}
			base := []history.Option{history.WithPin(pinned...)}
			sets := adapter.LadderOptions()
			for i := range sets {
				sets[i] = append(slices.Clone(base), sets[i]...)
			}
			adaptertest.Sweep(t, seed, adapter.Tokens(t, in), sets, func(t *testing.T, budget int, opts []history.Option) {
				out, res, err := adapter.Trimmed(t, in, budget, opts...)
				for _, i := range pinned {
					if !slices.Contains(out.Contents, contents[i]) {
						t.Fatalf("budget %d: pinned content %d is not in the output (%d dropped turns, err %v)", budget, i, res.DroppedTurns, err)
					}
				}
				if err != nil || res.DroppedTurns == 0 {
					return
				}
				// The request was rejected anyway: recovery keeps the pins
				// too, given as indices into what was sent.
				var sent []int
				for _, i := range pinned {
					sent = append(sent, slices.Index(out.Contents, contents[i]))
				}
				opts = append(slices.Clone(opts), history.WithPin(sent...))
				rec, _, err := RecoverOverflow(sys, out.Contents, overflowErr(2*res.TokensAfter, res.TokensAfter), 2, opts...)
				if err != nil && !errors.Is(err, history.ErrCannotRecover) {
					t.Fatalf("budget %d: RecoverOverflow: %v", budget, err)
				}
				if err := Validate(rec); err != nil {
					t.Fatalf("budget %d: recovered output fails Validate: %v", budget, err)
				}
				for _, i := range pinned {
					if !slices.Contains(rec, contents[i]) {
						t.Fatalf("budget %d: pinned content %d is not in the recovered output", budget, i)
					}
				}
			})
		}
	}
}

// pinnable returns the indices of the contents that convert to one
// message of no kind without calls or responses.
func pinnable(contents []*genai.Content) []int {
	var out []int
	for i, c := range contents {
		msgs, err := ToHistory([]*genai.Content{c})
		if err == nil && len(msgs) == 1 && msgs[0].Kind == "" && len(msgs[0].ToolCalls) == 0 && msgs[0].Role != history.RoleTool {
			out = append(out, i)
		}
	}
	return out
}

// contractConversation is six turns of a task, a function call, its
// response and an answer (the system instruction is contractSystem).
func contractConversation() []*genai.Content {
	var contents []*genai.Content
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		contents = append(contents, text("user", "task "+strconv.Itoa(i)+strings.Repeat(" words", 20)),
			&genai.Content{Role: "model", Parts: []*genai.Part{call(id, "read", nil)}},
			&genai.Content{Role: "user", Parts: []*genai.Part{resp(id, "read", map[string]any{"output": strings.Repeat("output line\n", 40)})}},
			text("model", "done "+strconv.Itoa(i)))
	}
	return contents
}

var contractSystem = text("", "be brief")

// TestContract runs the adapter through the contract every adapter keeps,
// with a system instruction: the Result describes the contents alone.
func TestContract(t *testing.T) {
	type content = *genai.Content
	c := &adaptertest.Contract[content]{
		Trim: func(msgs []content, budget int, opts ...history.Option) ([]content, history.Result, error) {
			return Trim(contractSystem, msgs, budget, opts...)
		},
		RecoverOverflow: func(msgs []content, err error, attempt int, opts ...history.Option) ([]content, history.Result, error) {
			return RecoverOverflow(contractSystem, msgs, err, attempt, opts...)
		},
		Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewConversations: func(s history.StateStore, opts ...history.Option) adaptertest.Conversations[content] {
			return adaptertest.BindSystem(NewConversations(s, opts...).SystemConversations, contractSystem)
		},
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[content] { return NewTrimmer(contractSystem, opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 12, Calls: 1, Results: 2,
		Task:       func(s string) content { return text("user", s) },
		Invalid:    []content{text("user", "hi"), nil},
		Bad:        1,
		Unpaired:   contractConversation()[:2],
		UnpairedAt: 1, UnpairedID: "call_0",
		Overflows:    []error{genai.APIError{Code: 400, Status: "INVALID_ARGUMENT", Message: "The input token count (2000) exceeds the maximum number of tokens allowed (1000)."}},
		NotOverflows: []error{genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted (e.g. check quota)."}, errors.New("connection reset")},
	}
	c.Run(t)
}

// TestCoreRequirement: go.mod requires the core release these tests run
// against, so that adapter and core are released and upgraded together.
func TestCoreRequirement(t *testing.T) { adaptertest.CoreRequirement(t) }

// overflowErr is the error the genai client returns for the Gemini API's
// answer to a request that does not fit: HTTP 400, INVALID_ARGUMENT.
func overflowErr(used, limit int) error {
	return genai.APIError{Code: 400, Status: "INVALID_ARGUMENT",
		Message: fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", used, limit)}
}

// recoverConv is three turns, the first two large, the last one a
// function call with its response: contents 5 to 8 are the latest turn.
func recoverConv() []*genai.Content {
	big := strings.Repeat("the quick brown fox jumps over the lazy dog ", 30)
	return []*genai.Content{
		text("user", "first task "+big),
		{Role: "model", Parts: []*genai.Part{call("a", "read", map[string]any{"path": "a.go"})}},
		{Role: "user", Parts: []*genai.Part{resp("a", "read", map[string]any{"output": big})}},
		text("model", "first answer"),
		text("user", "second task "+big),
		text("user", "third task"),
		{Role: "model", Parts: []*genai.Part{{Text: "plan", Thought: true}, {FunctionCall: &genai.FunctionCall{Name: "grep"}, ThoughtSignature: []byte("sig")}}},
		{Role: "user", Parts: []*genai.Part{resp("", "grep", map[string]any{"output": "found"})}},
		text("model", "third answer"),
	}
}

// TestRecoverOverflow: RecoverOverflow trims what was sent to the target
// the core derives from Gemini's error, maps it back as Trim does, and
// reports the core's errors for what is not an overflow or cannot be
// trimmed further.
func TestRecoverOverflow(t *testing.T) {
	sys := text("", "You are an agent.")
	latest := 5 // the latest turn of recoverConv starts here
	cases := []struct {
		name     string
		system   *genai.Content
		contents []*genai.Content
		err      func(est int) error // the provider's error, given the request's estimate
		attempt  int
		opts     []history.Option
		overhead int     // given with history.WithOverhead
		margin   float64 // the share of the stated limit the core aims at; 0: not recovered
		want     error   // the error RecoverOverflow returns
	}{
		{name: "genai.APIError", contents: recoverConv(), attempt: 1, margin: 0.9,
			err: func(est int) error { return overflowErr(est*12/10, est) }},
		{name: "*genai.APIError", contents: recoverConv(), attempt: 1, margin: 0.9,
			err: func(est int) error { e := overflowErr(est*12/10, est).(genai.APIError); return &e }},
		{name: "wrapped", contents: recoverConv(), attempt: 1, margin: 0.9,
			err: func(est int) error { return fmt.Errorf("generate: %w", overflowErr(est*12/10, est)) }},
		{name: "second attempt", system: sys, contents: recoverConv(), attempt: 2, margin: 0.75,
			err: func(est int) error { return overflowErr(est, est*9/10) }},
		{name: "system instruction, overhead and elision", system: sys, contents: recoverConv(), attempt: 1, margin: 0.9, overhead: 120,
			opts: []history.Option{history.WithElision(history.ElideOptions{MinTokens: -1})},
			err:  func(est int) error { return overflowErr(est*12/10, est) }},
		{name: "quota", contents: recoverConv(), attempt: 1, want: history.ErrNotOverflow,
			err: func(int) error {
				return genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted (e.g. check quota)."}
			}},
		{name: "another invalid argument", contents: recoverConv(), attempt: 1, want: history.ErrNotOverflow,
			err: func(int) error {
				return genai.APIError{Code: 400, Status: "INVALID_ARGUMENT",
					Message: "Please ensure that function call turn comes immediately after a user turn or after a function response turn."}
			}},
		{name: "nil error", system: sys, contents: recoverConv(), attempt: 1, want: history.ErrNotOverflow,
			err: func(int) error { return nil }},
		{name: "only the latest turn left", system: sys, contents: recoverConv()[latest:], attempt: 1, want: history.ErrCannotRecover,
			err: func(est int) error { return overflowErr(est*12/10, est) }},
		{name: "contents that do not convert", contents: append(recoverConv(), nil), attempt: 1, want: ErrInvalidContent,
			err: func(est int) error { return overflowErr(est*12/10, est) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			all, _, _, _ := convertRequest(tc.system, tc.contents, nil, nil)
			providerErr := tc.err(history.Estimate(all, nil))
			var events []history.Event
			opts := append(slices.Clone(tc.opts), history.WithOverhead(tc.overhead),
				history.WithOnTrim(func(e history.Event) { events = append(events, e) }))
			before := adaptertest.JSON(t, tc.contents)
			out, res, err := RecoverOverflow(tc.system, tc.contents, providerErr, tc.attempt, opts...)
			if adaptertest.JSON(t, tc.contents) != before {
				t.Fatal("RecoverOverflow modified its input")
			}
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				checkUnrecovered(t, tc.contents, out, res, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("output fails Validate: %v", err)
			}
			if res.DroppedTurns == 0 || len(events) != 1 || events[0].Reason != history.ReasonOverflow || events[0].Attempt != tc.attempt {
				t.Fatalf("dropped %d turns, events %+v; want turns dropped and one overflow event of attempt %d", res.DroppedTurns, events, tc.attempt)
			}
			ov, _ := history.ParseOverflow(providerErr)
			if want := int(float64(res.TokensBefore) * float64(ov.Limit) / float64(ov.Used) * tc.margin); res.Budget != want {
				t.Errorf("target %d, want %d: %d × %d/%d × %.2f", res.Budget, want, res.TokensBefore, ov.Limit, ov.Used, tc.margin)
			}
			if res.TokensAfter > res.Budget {
				t.Errorf("%d tokens left, target %d", res.TokensAfter, res.Budget)
			}
			tail := out[len(out)-(len(tc.contents)-latest):]
			for i, c := range tail {
				if c != tc.contents[latest+i] {
					t.Errorf("content %d of the latest turn is not the caller's", latest+i)
				}
			}
			back, _, err := convert(0, out, opts)
			if err != nil {
				t.Fatal(err)
			}
			if msg := sameMessages(back, res.Messages); msg != "" {
				t.Fatal(msg)
			}
			sent, _, _, _ := convertRequest(tc.system, out, opts, nil)
			if got := history.Estimate(sent, nil) + tc.overhead; got != res.TokensAfter {
				t.Errorf("the output and its system instruction count %d, Result.TokensAfter %d", got, res.TokensAfter)
			}
		})
	}
}

// checkUnrecovered checks what RecoverOverflow returned with an error:
// nothing for contents that do not convert; otherwise contents with the
// Result of the converted contents, unchanged for ErrNotOverflow, and a
// *history.RecoverError wrapping the provider's error for ErrCannotRecover.
func checkUnrecovered(t *testing.T, contents, out []*genai.Content, res history.Result, err error) {
	t.Helper()
	if errors.Is(err, ErrInvalidContent) {
		if out != nil || res.Messages != nil {
			t.Fatalf("%d contents, %d messages with a conversion error", len(out), len(res.Messages))
		}
		return
	}
	conv, convErr := ToHistory(contents)
	if convErr != nil {
		t.Fatal(convErr)
	}
	if errors.Is(err, history.ErrNotOverflow) {
		if !adaptertest.SameArray(out, contents) || !adaptertest.Identity(res.Kept, len(conv)) || res.Trimmed || len(res.Messages) != len(conv) {
			t.Fatalf("not an overflow: %d contents (same array %v), Kept %v, Trimmed %v; want the input unchanged",
				len(out), adaptertest.SameArray(out, contents), res.Kept, res.Trimmed)
		}
		return
	}
	var re *history.RecoverError
	var apiErr genai.APIError
	if !errors.As(err, &re) || !errors.As(err, &apiErr) || apiErr.Code != 400 {
		t.Fatalf("err = %v, want a *history.RecoverError wrapping the genai.APIError", err)
	}
	if re.Used == 0 || re.Limit == 0 || re.Attempt != 1 {
		t.Errorf("RecoverError %+v does not carry the provider's sizes and the attempt", re)
	}
	if len(out) != len(contents) {
		t.Errorf("%d contents left of %d", len(out), len(contents))
	}
	for i := range out {
		if out[i] != contents[i] {
			t.Errorf("content %d is not the caller's", i)
		}
	}
}

// TestRecoverOverflowCalibration: the sizes Gemini's error states are an
// observation for the calibration given with history.WithCalibration.
func TestRecoverOverflowCalibration(t *testing.T) {
	cal := &history.Calibration{}
	contents := recoverConv()
	conv, _ := ToHistory(contents)
	est := history.Estimate(conv, nil)
	_, _, err := RecoverOverflow(nil, contents, overflowErr(est*13/10, est), 1, history.WithCalibration(cal))
	if err != nil {
		t.Fatal(err)
	}
	scale, _, _, ok := cal.Model()
	if !ok || scale < 1.25 || scale > 1.35 {
		t.Fatalf("model %v (ok %v), want the scale 1.3 the error states", scale, ok)
	}
}
