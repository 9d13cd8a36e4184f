package langchaingo

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
)

func msg(role llms.ChatMessageType, parts ...llms.ContentPart) llms.MessageContent {
	return llms.MessageContent{Role: role, Parts: parts}
}

func txt(s string) llms.TextContent { return llms.TextContent{Text: s} }

func call(id, name, args string) llms.ToolCall {
	return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
}

func resp(id, name, content string) llms.ToolCallResponse {
	return llms.ToolCallResponse{ToolCallID: id, Name: name, Content: content}
}

// rich is a conversation using every part type the adapter must carry.
func rich(t testing.TB) []llms.MessageContent {
	big := strings.Repeat("the quick brown fox jumps over the lazy dog ", 40)
	return []llms.MessageContent{
		msg(llms.ChatMessageTypeSystem, llms.WithCacheControl(txt("You are terse."), &llms.CacheControl{Type: "ephemeral", Duration: time.Hour})),
		msg(llms.ChatMessageTypeHuman,
			txt("what is in this picture? "+big),
			llms.BinaryPart("image/png", adaptertest.PNG(t, 1024, 512)),
			llms.ImageURLWithDetailPart("data:image/png;base64,"+base64.StdEncoding.EncodeToString(adaptertest.PNG(t, 64, 32)), "low"),
			llms.BinaryPart("application/pdf", make([]byte, 3200)),
		),
		msg(llms.ChatMessageTypeAI, txt("Searching twice."), call("c1", "search", `{"q":"fox"}`), call("c2", "search", `{"q":"dog"}`)),
		msg(llms.ChatMessageTypeTool, resp("c2", "search", big), resp("c1", "search", "3 hits")),
		msg(llms.ChatMessageTypeAI, txt("A fox and a dog. "+big)),
		msg(llms.ChatMessageTypeGeneric, txt("and the second picture? "+big), llms.ImageURLPart("https://example.com/cat.jpg")),
		msg(llms.ChatMessageTypeAI, txt("It is a cat."), call("c3", "save", `{}`)),
		msg(llms.ChatMessageTypeTool, llms.WithCacheControl(resp("c3", "save", "ok"), &llms.CacheControl{Type: "ephemeral"})),
		msg(llms.ChatMessageTypeHuman, txt("thanks")),
	}
}

func TestToHistory(t *testing.T) {
	msgs, err := ToHistory(rich(t))
	if err != nil {
		t.Fatal(err)
	}
	roles := make([]history.Role, len(msgs))
	for i, m := range msgs {
		roles[i] = m.Role
	}
	want := []history.Role{"system", "user", "assistant", "tool", "tool", "assistant", "user", "assistant", "tool", "user"}
	if !slices.Equal(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	if msgs[0].Content != "You are terse." {
		t.Errorf("cached system text = %q", msgs[0].Content)
	}
	u := msgs[1].Parts
	if len(u) != 3 || u[0].Width != 1024 || u[0].Height != 512 || u[1].Width != 64 || u[1].Detail != "low" ||
		u[2].Type != history.PartFile || u[2].Size != 3200 {
		t.Errorf("user parts = %+v", u)
	}
	if got := msgs[2].ToolCalls; len(got) != 2 || got[1] != (history.ToolCall{ID: "c2", Name: "search", Arguments: `{"q":"dog"}`}) {
		t.Errorf("calls = %+v", got)
	}
	if msgs[3].ToolCallID != "c2" || msgs[4].ToolCallID != "c1" || msgs[4].Content != "3 hits" || msgs[4].Name != "search" {
		t.Errorf("responses = %+v %+v", msgs[3], msgs[4])
	}
	if msgs[8].ToolCallID != "c3" {
		t.Errorf("cached response = %+v", msgs[8])
	}
	if _, rep := history.SweepOrphans(msgs); rep.Total() != 0 {
		t.Errorf("well-paired conversion swept: %+v", rep)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name, reason string
		in           []llms.MessageContent
	}{
		{"function role", "legacy function messages have no ids", []llms.MessageContent{msg(llms.ChatMessageTypeFunction, txt("x"))}},
		{"unknown role", "only langchaingo's roles", []llms.MessageContent{msg("developer", txt("x"))}},
		{"nil part", "a nil part cannot be converted", []llms.MessageContent{msg(llms.ChatMessageTypeHuman, nil)}},
		{"call from human", "only the AI calls tools", []llms.MessageContent{msg(llms.ChatMessageTypeHuman, call("a", "f", ""))}},
		{"response from AI", "responses live in tool messages", []llms.MessageContent{msg(llms.ChatMessageTypeAI, resp("a", "f", ""))}},
		{"call in tool", "a tool message does not call", []llms.MessageContent{msg(llms.ChatMessageTypeTool, call("a", "f", ""))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Trim(c.in, 100)
			if !errors.Is(err, ErrInvalidMessage) || !strings.HasPrefix(err.Error(), "history/langchaingo: ") {
				t.Errorf("err = %v, want ErrInvalidMessage (%s)", err, c.reason)
			}
		})
	}
	if _, _, err := Trim(nil, 0); !errors.Is(err, history.ErrInvalidBudget) {
		t.Errorf("budget 0: %v", err)
	}
}

func TestTrimRoundTrip(t *testing.T) {
	in := rich(t)
	before := adaptertest.JSON(t, in)
	out, res, err := Trim(in, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if !adaptertest.Identity(res.Kept, len(res.Messages)) || &out[0] != &in[0] || cap(out) != len(in) {
		t.Fatal("a fitting history must come back as the caller's slice, clipped")
	}

	conv, _ := ToHistory(in)
	budget := history.Estimate(append([]history.Message{conv[0], history.Breadcrumb()}, conv[6:]...), nil)
	out, res, err = Trim(in, budget)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Kept, []int{0, -1, 6, 7, 8, 9}) || res.DroppedTurns != 1 {
		t.Fatalf("Kept = %v, dropped %d; want the system, a breadcrumb and the last two turns", res.Kept, res.DroppedTurns)
	}
	wantNative := append([]llms.MessageContent{in[0]}, in[5:]...)
	gotNative := append([]llms.MessageContent{out[0]}, out[2:]...)
	if !reflect.DeepEqual(gotNative, wantNative) || adaptertest.JSON(t, gotNative) != adaptertest.JSON(t, wantNative) {
		t.Errorf("kept messages changed:\n got %s\nwant %s", adaptertest.JSON(t, gotNative), adaptertest.JSON(t, wantNative))
	}
	for j := range gotNative {
		if !adaptertest.SameArray(gotNative[j].Parts, wantNative[j].Parts) {
			t.Errorf("kept message %d does not share the caller's parts", j)
		}
	}
	// The cache-control wrapper and its json:"-" duration survive.
	if cc := out[0].Parts[0].(llms.CachedContent); cc.CacheControl.Duration != time.Hour {
		t.Errorf("cache control = %+v", cc.CacheControl)
	}
	if got := adaptertest.JSON(t, out[1]); got != `{"role":"human","text":"[earlier turns omitted to fit the context window]"}` {
		t.Errorf("breadcrumb = %s", got)
	}
	if adaptertest.JSON(t, in) != before {
		t.Error("Trim modified the input")
	}
}

func TestTrimCutsDown(t *testing.T) {
	ai := msg(llms.ChatMessageTypeAI, txt("checking"), call("a", "f", "{}"), call("b", "g", "{}"), call("c", "h", "{}"))
	tool := msg(llms.ChatMessageTypeTool, resp("a", "f", "A"), resp("zzz", "nope", "?"), txt("note"), resp("c", "h", "C"))
	in := []llms.MessageContent{msg(llms.ChatMessageTypeHuman, txt("go")), ai, tool, msg(llms.ChatMessageTypeAI, txt("done"))}
	before := adaptertest.JSON(t, in)
	out, res, err := Trim(in, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if res.OrphansRemoved != 2 || len(out) != 4 {
		t.Fatalf("OrphansRemoved = %d, %d messages; want call b and response zzz gone", res.OrphansRemoved, len(out))
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out[1].Parts, []llms.ContentPart{ai.Parts[0], ai.Parts[1], ai.Parts[3]}) || adaptertest.SameArray(out[1].Parts, ai.Parts) {
		t.Errorf("AI message = %s, want a new message without call b", adaptertest.JSON(t, out[1]))
	}
	if !reflect.DeepEqual(out[2].Parts, []llms.ContentPart{tool.Parts[0], tool.Parts[2], tool.Parts[3]}) || out[2].Role != llms.ChatMessageTypeTool {
		t.Errorf("tool message = %s, want the two real responses and the note", adaptertest.JSON(t, out[2]))
	}
	if adaptertest.JSON(t, in) != before || len(ai.Parts) != 4 {
		t.Error("Trim modified the caller's messages")
	}
}

func TestValidate(t *testing.T) {
	h := func(s string) llms.MessageContent { return msg(llms.ChatMessageTypeHuman, txt(s)) }
	a := func(ids ...string) llms.MessageContent {
		m := msg(llms.ChatMessageTypeAI)
		for _, id := range ids {
			m.Parts = append(m.Parts, call(id, "f", "{}"))
		}
		return m
	}
	tl := func(ids ...string) llms.MessageContent {
		m := msg(llms.ChatMessageTypeTool)
		for _, id := range ids {
			m.Parts = append(m.Parts, resp(id, "f", "r"))
		}
		return m
	}
	cases := []struct {
		name   string
		in     []llms.MessageContent
		bad    int
		reason string
	}{
		{"empty", nil, -1, "nothing to pair"},
		{"one per message", []llms.MessageContent{h("x"), a("1", "2"), tl("2"), tl("1"), h("y")}, -1, "responses in any order"},
		{"several per message", []llms.MessageContent{h("x"), a("1", "2"), tl("1", "2")}, -1, "one tool message may answer several calls"},
		{"reused id", []llms.MessageContent{h("x"), a("1"), tl("1"), a("1"), tl("1")}, -1, "ids may repeat across exchanges"},
		{"cached", []llms.MessageContent{h("x"), msg(llms.ChatMessageTypeAI, llms.WithCacheControl(call("1", "f", ""), nil)), msg(llms.ChatMessageTypeTool, llms.WithCacheControl(resp("1", "f", ""), nil))}, -1, "cache wrappers are looked through"},
		{"orphan", []llms.MessageContent{h("x"), tl("1")}, 1, "a response needs a call"},
		{"late", []llms.MessageContent{h("x"), a("1"), tl("1"), h("y"), tl("1")}, 4, "responses must follow their call"},
		{"unknown id", []llms.MessageContent{h("x"), a("1"), tl("2")}, 2, "the id must be a call's"},
		{"twice", []llms.MessageContent{h("x"), a("1"), tl("1", "1")}, 2, "one response per call"},
		{"unanswered", []llms.MessageContent{h("x"), a("1", "2"), tl("1"), h("y")}, 1, "every call needs a response"},
		{"trailing", []llms.MessageContent{h("x"), a("1")}, 1, "a trailing call is unanswered"},
		{"human calls", []llms.MessageContent{msg(llms.ChatMessageTypeHuman, call("1", "f", ""))}, 0, "only the AI calls"},
		{"empty id", []llms.MessageContent{h("x"), a(""), tl("")}, 1, "ids are required"},
	}
	where := func(e *PairingError) (int, string) { return e.Index, "" }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			adaptertest.Violation(t, Validate(c.in), ErrUnpaired, where, c.bad, "", c.reason)
		})
	}
}

// checkTrim trims in at budget and checks the invariants: the output
// validates, the input is untouched, and every message is the breadcrumb,
// the caller's message (sharing its parts), or a new message over a
// subsequence of one caller message's parts.
func checkTrim(t *testing.T, in []llms.MessageContent, budget int) {
	t.Helper()
	out, res, _ := adapter.Trimmed(t, in, budget)
	next := 0
	for j, m := range out {
		if slices.Contains(res.Kept, -1) && j == slices.Index(res.Kept, -1) {
			continue // the breadcrumb: after the system messages, which are one for one
		}
		found := false
		for i := next; i < len(in) && !found; i++ {
			if m.Role == in[i].Role && (adaptertest.SameArray(m.Parts, in[i].Parts) || adaptertest.Subsequence(m.Parts, in[i].Parts, adaptertest.DeepEqual[llms.ContentPart])) {
				found, next = true, i+1
			}
		}
		if !found {
			t.Fatalf("budget %d: message %d is not the caller's: %s", budget, j, adaptertest.JSON(t, m))
		}
	}
}

func TestTrimEveryBudget(t *testing.T) {
	in := rich(t)
	_, res, err := Trim(in, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for budget := 1; budget <= res.TokensBefore+50; budget += 5 {
		checkTrim(t, in, budget)
	}
}

// gen builds a conversation from fuzz input: turns of a human prompt, tool
// rounds of parallel calls answered in one tool message or several, in
// shuffled order, sometimes with a response missing, an orphan response or
// a wrong id, and a closing AI reply.
func gen(data []byte) []llms.MessageContent {
	seed := adaptertest.Bytes(data)
	next := seed.Byte
	out := []llms.MessageContent{msg(llms.ChatMessageTypeSystem, txt("sys"))}
	for turn := 0; len(seed) > 0 && turn < 12; turn++ {
		out = append(out, msg(llms.ChatMessageTypeHuman, txt(strings.Repeat("prompt ", 1+next()%40))))
		for round := next() % 3; round > 0; round-- {
			m := msg(llms.ChatMessageTypeAI)
			if next()%2 == 0 {
				m.Parts = append(m.Parts, txt("let me look"))
			}
			var rs []llms.ContentPart
			for k := range 1 + next()%3 {
				id := string(rune('a'+turn)) + string(rune('0'+k))
				m.Parts = append(m.Parts, call(id, "f", "{}"))
				rs = append(rs, resp(id, "f", strings.Repeat("x", next())))
			}
			switch next() % 8 {
			case 0:
				rs = rs[1:]
			case 1:
				rs = append(rs, resp("orphan", "f", "?"))
			case 2:
				rs[0] = resp("wrong", "f", "?")
			}
			if len(rs) > 1 && next()%2 == 0 {
				rs[0], rs[len(rs)-1] = rs[len(rs)-1], rs[0]
			}
			out = append(out, m)
			if next()%2 == 0 {
				if len(rs) > 0 {
					out = append(out, msg(llms.ChatMessageTypeTool, rs...))
				}
			} else {
				for _, r := range rs {
					out = append(out, msg(llms.ChatMessageTypeTool, r))
				}
			}
		}
		out = append(out, msg(llms.ChatMessageTypeAI, txt(strings.Repeat("answer ", 1+next()%40))))
	}
	return out
}

func FuzzTrim(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint16(200))
	f.Add([]byte{0, 1, 2, 0, 1, 0, 2, 1, 0, 0, 5, 3, 2, 1, 0, 0, 9, 1, 2, 2, 2, 2}, uint16(60))
	f.Add(bytes.Repeat([]byte{7, 2, 1, 0, 3}, 30), uint16(500))
	f.Fuzz(func(t *testing.T, data []byte, budget uint16) {
		checkTrim(t, gen(data), int(budget)+1)
	})
}

// overflowErr is LangChainGo's OpenAI provider's error for a request over
// the window.
func overflowErr(limit, used int) error {
	return fmt.Errorf("API returned unexpected status code: 400: This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", limit, used)
}

// tokens is the Heuristic's count of msgs.
func tokens(t testing.TB, msgs []llms.MessageContent) int {
	t.Helper()
	hist, err := ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return history.Estimate(hist, nil)
}

// chat returns a system message followed by n turns of a task, a tool
// step and an answer, each turn about 300 tokens.
func chat(n int) []llms.MessageContent {
	out := []llms.MessageContent{msg(llms.ChatMessageTypeSystem, txt("You are an agent."))}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		out = append(out,
			msg(llms.ChatMessageTypeHuman, txt(fmt.Sprintf("task %d: %s", i, strings.Repeat("do it well ", 20)))),
			msg(llms.ChatMessageTypeAI, call(id, "read", `{"path":"a.go"}`)),
			msg(llms.ChatMessageTypeTool, resp(id, "read", strings.Repeat("func f() { return 42 }\n", 25))),
			msg(llms.ChatMessageTypeAI, txt(fmt.Sprintf("answer %d: %s", i, strings.Repeat("it is done ", 10)))))
	}
	return out
}

// contractConversation is a system prompt and six turns of a task, a
// call, its response and an answer.
func contractConversation() []llms.MessageContent {
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "be brief")}
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, "task "+strconv.Itoa(i)+strings.Repeat(" words", 20)),
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "read", Arguments: `{}`}}}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id, Name: "read", Content: strings.Repeat("output line\n", 40)}}},
			llms.TextParts(llms.ChatMessageTypeAI, "done "+strconv.Itoa(i)))
	}
	return msgs
}

// TestContract runs the adapter through the contract every adapter keeps,
// with the errors LangChainGo's providers return: an overflow under
// LangChainGo's rate_limit label, and a 429 whose text reads like one.
func TestContract(t *testing.T) {
	overflow := adaptertest.OverflowText(1000, 2000)
	c := &adaptertest.Contract[llms.MessageContent]{
		Trim: Trim, RecoverOverflow: RecoverOverflow, Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewConversations: func(s history.StateStore, opts ...history.Option) adaptertest.Conversations[llms.MessageContent] {
			return NewConversations(s, opts...)
		},
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[llms.MessageContent] { return NewTrimmer(opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 13, Calls: 2, Results: 3,
		Task:       func(s string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeHuman, s) },
		Invalid:    []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi"), {Role: "narrator"}},
		Bad:        1,
		Unpaired:   contractConversation()[:3],
		UnpairedAt: 2, UnpairedID: "call_0",
		Overflows: []error{overflow, &llms.Error{Code: llms.ErrCodeRateLimit, Message: "Rate limit exceeded", Provider: "openai", Cause: overflow}},
		NotOverflows: []error{errors.New("Rate limit reached for gpt-4o: please try again in 20s"),
			errors.New("API returned unexpected status code: 429: This model's maximum context length is 1000 tokens. However, your messages resulted in 2000 tokens.")},
	}
	c.Run(t)
}

// TestCoreRequirement: go.mod requires the core release these tests run
// against, so that adapter and core are released and upgraded together.
func TestCoreRequirement(t *testing.T) { adaptertest.CoreRequirement(t) }

func TestOverhead(t *testing.T) {
	tools := loopTools()[:3]
	asSent, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	system := func(s string) history.Message { return history.Message{Role: history.RoleSystem, Content: s} }
	byBytes := history.CounterFunc(func(m history.Message) int { return len(m.Content) })
	negative := history.CounterFunc(func(history.Message) int { return -7 })
	unencodable := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "bad", Parameters: map[string]any{"f": func() {}}}}}
	tests := []struct {
		name  string
		tools []llms.Tool
		c     history.Counter
		want  int
	}{
		{"nil", nil, nil, 0},
		{"empty", []llms.Tool{}, byBytes, 0},
		{"heuristic by default", tools, nil, history.Heuristic().CountMessage(system(string(asSent)))},
		{"the caller's counter, on the JSON as sent", tools, byBytes, len(asSent)},
		{"a negative count is none", tools, negative, 0},
		{"a tool without a function", []llms.Tool{{Type: "function"}}, byBytes, len(`[{"type":"function"}]`)},
	}
	for _, tc := range tests {
		if got := Overhead(tc.tools, tc.c); got != tc.want {
			t.Errorf("%s: Overhead = %d, want %d", tc.name, got, tc.want)
		}
	}
	// Parameters that do not encode are counted in their printed form.
	if got := Overhead(unencodable, byBytes); got < len(`[{"type":"function","function":{"name":"bad","description":"","parameters":"map[f:0x`) {
		t.Errorf("unencodable parameters: Overhead = %d", got)
	}
	if _, ok := unencodable[0].Function.Parameters.(map[string]any); !ok {
		t.Error("Overhead modified the caller's tool")
	}
	// More tools cost more.
	if one, all := Overhead(tools[:1], nil), Overhead(loopTools(), nil); one <= 0 || all <= 10*one {
		t.Errorf("1 tool costs %d, 20 cost %d", one, all)
	}
}

// pinned is a conversation whose first tool message holds three responses
// and a note (five history messages for one native one), so that native
// and converted indices differ after it, with messages worth pinning in
// old turns: a human note (7), an AI note (9) and a tool message holding
// only text (12).
func pinned() []llms.MessageContent {
	big := strings.Repeat("some output line\n", 40)
	return []llms.MessageContent{
		msg(llms.ChatMessageTypeSystem, txt("sys")),                                                               // 0
		msg(llms.ChatMessageTypeHuman, txt("task one "+big)),                                                      // 1
		msg(llms.ChatMessageTypeAI, call("a", "f", "{}"), call("b", "f", "{}"), call("c", "f", "{}")),             // 2
		msg(llms.ChatMessageTypeTool, resp("a", "f", big), resp("b", "f", big), txt("note"), resp("c", "f", big)), // 3
		msg(llms.ChatMessageTypeAI, txt("done one")),                                                              // 4
		msg(llms.ChatMessageTypeHuman, txt("task two "+big)),                                                      // 5
		msg(llms.ChatMessageTypeAI, txt("done two "+big)),                                                         // 6
		msg(llms.ChatMessageTypeHuman, txt("remember: deploy on Fridays is forbidden")),                           // 7
		msg(llms.ChatMessageTypeAI, txt("noted")),                                                                 // 8
		msg(llms.ChatMessageTypeAI, txt("plan: 1. read 2. fix 3. test")),                                          // 9
		msg(llms.ChatMessageTypeHuman, txt("task three "+big)),                                                    // 10
		msg(llms.ChatMessageTypeAI, call("d", "f", "{}")),                                                         // 11
		msg(llms.ChatMessageTypeTool, resp("d", "f", big)),                                                        // 12
		msg(llms.ChatMessageTypeTool, txt("reminder: keep it short")),                                             // 13
		msg(llms.ChatMessageTypeAI, txt("done three")),                                                            // 14
		msg(llms.ChatMessageTypeHuman, txt("task four")),                                                          // 15
		msg(llms.ChatMessageTypeAI, call("e", "f", "{}")),                                                         // 16
		msg(llms.ChatMessageTypeTool, resp("e", "f", big)),                                                        // 17
		msg(llms.ChatMessageTypeAI, txt("done four")),                                                             // 18
	}
}

// TestPinSurvivesEveryBudget: pinned native messages are in the output at
// every budget, as the caller's values, with every option set of the
// ladder.
func TestPinSurvivesEveryBudget(t *testing.T) {
	in := pinned()
	pins := []int{7, 9, 13}
	total := tokens(t, in)
	sets := append(adapter.LadderOptions(), nil)
	for o, opts := range sets {
		for _, budget := range adaptertest.Budgets(total, 40) {
			opts := append(slices.Clone(opts), history.WithPin(pins...))
			out, res, err := Trim(in, budget, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatalf("options %d, budget %d: %v", o, budget, err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("options %d, budget %d: %v", o, budget, err)
			}
			for _, i := range pins {
				if !slices.ContainsFunc(out, func(m llms.MessageContent) bool { return adaptertest.SameArray(m.Parts, in[i].Parts) }) {
					t.Fatalf("options %d, budget %d: pinned message %d is gone (%d dropped turns)", o, budget, i, res.DroppedTurns)
				}
			}
			if budget < total/3 && res.DroppedTurns == 0 {
				t.Fatalf("options %d, budget %d: nothing dropped", o, budget)
			}
		}
	}
}

func TestPinErrors(t *testing.T) {
	in := pinned()
	notice := append([]llms.MessageContent{in[0], msg(llms.ChatMessageTypeHuman, txt(history.BreadcrumbText))}, in[5:]...)
	tests := []struct {
		name   string
		in     []llms.MessageContent
		pins   []int
		reason string // in the error
	}{
		{"tool message with responses", in, []int{3}, "message 3 is a tool result"},
		{"single response", in, []int{7, 12}, "message 12 is a tool result"},
		{"AI message with calls", in, []int{11}, "message 11 has tool calls"},
		{"outside", in, []int{19}, "index 19 is outside the history of 19 messages"},
		{"notice", notice, []int{1}, "message 1 is a notice"},
		{"negative", in, []int{-1}, "index -1 is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []func() error{
				func() error { _, _, err := Trim(tc.in, 100, history.WithPin(tc.pins...)); return err },
				func() error {
					_, _, err := RecoverOverflow(tc.in, overflowErr(10, 20), 1, history.WithPin(tc.pins...))
					return err
				},
			} {
				err := f()
				var oe *history.OptionError
				if !errors.Is(err, history.ErrInvalidOption) || !errors.As(err, &oe) || oe.Option != "WithPin" || !strings.Contains(oe.Reason, tc.reason) {
					t.Errorf("err = %v, want a WithPin *OptionError saying %q", err, tc.reason)
				}
			}
		})
	}
}

func TestRecoverOverflow(t *testing.T) {
	ten := chat(10)
	total := tokens(t, ten)
	// A tool message answering two calls, one response large: the
	// recovery must keep or drop the tool message whole, and elide
	// inside it under WithElision.
	split := append(chat(4), msg(llms.ChatMessageTypeHuman, txt("last task")),
		msg(llms.ChatMessageTypeAI, call("x1", "read", "{}"), call("x2", "grep", "{}")),
		msg(llms.ChatMessageTypeTool, resp("x1", "read", strings.Repeat("line of code\n", 200)), resp("x2", "grep", "2 hits")),
		msg(llms.ChatMessageTypeAI, txt("done")))
	rateLimit := errors.New("API returned unexpected status code: 429: Rate limit reached for requests")
	tests := []struct {
		name      string
		in        []llms.MessageContent
		err       error
		attempt   int
		opts      []history.Option
		wantErr   error // nil: recovered
		maxTokens int   // the recovered history counts at most this; 0: not checked
		reason    string
	}{
		{"sizes stated", ten, overflowErr(1000, 1250), 1, nil, nil, total * 1000 / 1250 * 90 / 100,
			"E × Limit/Used × 0.9"},
		{"no sizes, attempt 1", ten, errors.New("400: context_length_exceeded"), 1, nil, nil, total * 3 / 4,
			"E × 0.75 without sizes"},
		{"no sizes, attempt 2", ten, errors.New("400: context_length_exceeded"), 2, nil, nil, total / 2,
			"E × 0.5 on the second retry"},
		{"elision inside a split tool message", split, overflowErr(1000, 1100), 1,
			[]history.Option{history.WithElision(history.ElideOptions{KeepRecent: -1}), history.WithStepTrim()}, nil, 0,
			"the ladder works through the recovery"},
		{"not an overflow", ten, rateLimit, 1, nil, history.ErrNotOverflow, 0,
			"a rate limit is not the trim's to fix"},
		{"nil error", ten, nil, 1, nil, history.ErrNotOverflow, 0,
			"no error, nothing to recover from"},
		{"nothing to drop", chat(1), overflowErr(100, 400), 1, nil, history.ErrCannotRecover, 0,
			"only the system message and the latest turn are left"},
		{"invalid message", []llms.MessageContent{msg(llms.ChatMessageTypeFunction, txt("x"))}, overflowErr(1, 2), 1, nil, ErrInvalidMessage, 0,
			"conversion errors as Trim's"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := adaptertest.JSON(t, tc.in)
			out, res, err := RecoverOverflow(tc.in, tc.err, tc.attempt, tc.opts...)
			if adaptertest.JSON(t, tc.in) != before {
				t.Fatal("RecoverOverflow modified its input")
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("err = %v (%s)", err, tc.reason)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v (%s)", err, tc.wantErr, tc.reason)
			}
			switch {
			case errors.Is(tc.wantErr, history.ErrNotOverflow):
				if !adaptertest.SameArray(out, tc.in) || cap(out) != len(tc.in) {
					t.Errorf("not an overflow: the input must come back as it is, clipped")
				}
				return
			case errors.Is(tc.wantErr, history.ErrCannotRecover):
				var re *history.RecoverError
				if !errors.As(err, &re) || !errors.Is(err, tc.err) || re.Attempt != tc.attempt || re.Used != 400 || re.Limit != 100 {
					t.Errorf("err = %#v, want a *RecoverError wrapping the provider's error with its sizes", err)
				}
			case tc.wantErr != nil:
				if out != nil || res.Kept != nil {
					t.Errorf("a conversion error comes with no messages")
				}
				return
			default:
				if !res.Trimmed || res.TokensAfter >= tokens(t, tc.in) {
					t.Errorf("nothing dropped or elided: %d of %d messages, %d tokens", len(out), len(tc.in), res.TokensAfter)
				}
			}
			if err := Validate(out); err != nil {
				t.Errorf("output fails Validate: %v", err)
			}
			if got := tokens(t, out); got != res.TokensAfter {
				t.Errorf("output counts %d, Result says %d", got, res.TokensAfter)
			}
			if tc.maxTokens > 0 && res.TokensAfter > tc.maxTokens {
				t.Errorf("recovered to %d tokens, want at most %d (%s)", res.TokensAfter, tc.maxTokens, tc.reason)
			}
			last, in := out[len(out)-1], tc.in[len(tc.in)-1]
			if !adaptertest.SameArray(last.Parts, in.Parts) {
				t.Error("the latest message is not the caller's")
			}
			if tc.name == "elision inside a split tool message" {
				checkSplitElided(t, out, res)
			}
		})
	}
}

// checkSplitElided: the split tool message is one message again, its
// large response elided, its small one the caller's.
func checkSplitElided(t *testing.T, out []llms.MessageContent, res history.Result) {
	t.Helper()
	tool := out[len(out)-2]
	if tool.Role != llms.ChatMessageTypeTool || len(tool.Parts) != 2 || res.ElidedResults == 0 {
		t.Fatalf("tool message %s, %d elided", adaptertest.JSON(t, tool), res.ElidedResults)
	}
	r0, r1 := tool.Parts[0].(llms.ToolCallResponse), tool.Parts[1].(llms.ToolCallResponse)
	if r0.ToolCallID != "x1" || !strings.HasPrefix(r0.Content, "[elided tool result: read") || r1 != resp("x2", "grep", "2 hits") {
		t.Errorf("responses %+v, %+v; want x1 elided, x2 as it was", r0, r1)
	}
}

// TestRecoverOverflowRetries: each attempt on the previous output goes
// further, and the last ends in ErrCannotRecover, never in an empty or
// unpaired history.
func TestRecoverOverflowRetries(t *testing.T) {
	send := chat(6)
	err := errors.New("400: context_length_exceeded")
	prev := tokens(t, send)
	for attempt := 1; ; attempt++ {
		out, res, rerr := RecoverOverflow(send, err, attempt)
		if errors.Is(rerr, history.ErrCannotRecover) {
			if attempt < 2 || len(out) == 0 || Validate(out) != nil {
				t.Fatalf("attempt %d: ErrCannotRecover with %d messages", attempt, len(out))
			}
			return
		}
		if rerr != nil || res.TokensAfter >= prev || Validate(out) != nil {
			t.Fatalf("attempt %d: %v, %d tokens after %d", attempt, rerr, res.TokensAfter, prev)
		}
		if attempt > 10 {
			t.Fatal("no end to the recoveries")
		}
		send, prev = out, res.TokensAfter
	}
}

const overflowMsg = "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens."

// httpCoder is an error with gax's HTTPCode() int, as *apierror.APIError.
type httpCoder struct {
	code int
	msg  string
}

func (e *httpCoder) Error() string { return e.msg }
func (e *httpCoder) HTTPCode() int { return e.code }

// panicky panics in every method.
type panicky struct{}

func (panicky) Error() string   { panic("Error") }
func (panicky) Unwrap() error   { panic("Unwrap") }
func (panicky) HTTPCode() int   { panic("HTTPCode") }
func (panicky) StatusCode() int { panic("StatusCode") }

// loop unwraps to itself.
type loop struct{ msg string }

func (e *loop) Error() string { return e.msg }
func (e *loop) Unwrap() error { return e }

// wide unwraps to thousands of errors, each of them wide again.
type wide struct{}

var wideChildren = func() []error {
	errs := make([]error, 1<<14)
	for i := range errs {
		errs[i] = wide{}
	}
	return errs
}()

func (wide) Error() string   { return "wide" }
func (wide) Unwrap() []error { return wideChildren }

func TestParseOverflow(t *testing.T) {
	flat := func(status int, msg string) error {
		return fmt.Errorf("anthropic: failed to create message: %w", fmt.Errorf("%s%d: %s", statusPrefix, status, msg))
	}
	want := history.Overflow{Used: 4294, Limit: 4097}
	tests := []struct {
		name string
		err  error
		want bool
		ov   history.Overflow
	}{
		{name: "nil", err: nil},
		{name: "flat 400", err: flat(400, overflowMsg), want: true, ov: want},
		{name: "flat 429", err: flat(429, overflowMsg)},
		{name: "flat 401", err: flat(401, overflowMsg)},
		{name: "flat 403", err: flat(403, overflowMsg)},
		{name: "flat 402", err: flat(402, overflowMsg)},
		{name: "flat 500 is not a veto", err: flat(500, overflowMsg), want: true, ov: want},
		{name: "flattened by %v", err: fmt.Errorf("turn 3: %v", flat(429, overflowMsg))},
		{name: "status of four digits is not a status", err: errors.New(statusPrefix + "4290: " + overflowMsg), want: true, ov: want},
		{name: "status cut short", err: errors.New(statusPrefix + "42"), want: false},
		{name: "no digits after the prefix", err: errors.New(statusPrefix + "abc: " + overflowMsg), want: true, ov: want},
		{name: "HTTPCode 429", err: fmt.Errorf("x: %w", &httpCoder{429, overflowMsg})},
		{name: "HTTPCode 400", err: &httpCoder{400, overflowMsg}, want: true, ov: want},
		{name: "HTTPCode -1 (not HTTP)", err: &httpCoder{-1, overflowMsg}, want: true, ov: want},
		{
			name: "llms.Error label that reads as a rate limit",
			err:  fmt.Errorf("x: %w", llms.NewError(llms.ErrCodeRateLimit, "openai", "Rate limit exceeded").WithCause(flat(400, overflowMsg))),
			want: true, ov: want,
		},
		{
			name: "llms.Error over a real 429",
			err:  llms.NewError(llms.ErrCodeRateLimit, "openai", "Rate limit exceeded").WithCause(flat(429, overflowMsg)),
		},
		{
			name: "llms.Error without a cause is classified as it is",
			err:  llms.NewError(llms.ErrCodeTokenLimit, "openai", overflowMsg),
			want: true, ov: want,
		},
		{
			name: "llms.Error wrapping another",
			err: llms.NewError(llms.ErrCodeUnknown, "a", "rate limit").WithCause(
				llms.NewError(llms.ErrCodeUnknown, "b", "quota").WithCause(errors.New(overflowMsg))),
			want: true, ov: want,
		},
		{name: "typed nil llms.Error", err: fmt.Errorf("x: %w", (*llms.Error)(nil))},
		{name: "panicking error beside an overflow", err: errors.Join(panicky{}, errors.New(overflowMsg)), want: true, ov: want},
		{name: "panicking error beside a 429", err: errors.Join(panicky{}, flat(429, overflowMsg))},
		{name: "cycle", err: &loop{overflowMsg}, want: true, ov: want},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ov, ok := ParseOverflow(tc.err)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v", ov, ok, tc.ov, tc.want)
			}
			if IsContextOverflow(tc.err) != tc.want {
				t.Fatal("IsContextOverflow disagrees with ParseOverflow")
			}
		})
	}
}

// TestWalkBounds checks that the adapter's own walks stay bounded on a tree
// where every error unwraps to thousands of errors. (The core's classifier
// is not run on it: it visits up to 65,536 errors of such a tree.)
func TestWalkBounds(t *testing.T) {
	visited := 0
	walk(wide{}, func(e error) bool {
		visited++
		return false
	})
	if visited > maxWalk {
		t.Fatalf("walk visited %d errors, more than %d", visited, maxWalk)
	}
	if got := hiddenStatus(wide{}); got != 0 {
		t.Fatalf("hiddenStatus = %d, want 0", got)
	}
	long := errors.New(strings.Repeat("a", maxText) + statusPrefix + "429")
	if got := hiddenStatus(errors.Join(long, errors.New(statusPrefix+"401"))); got != 0 {
		t.Fatalf("hiddenStatus read %d beyond its text budget", got)
	}
	if got := hiddenStatus(errors.Join(errors.New("x"), errors.New(statusPrefix+"401"))); got != 401 {
		t.Fatalf("hiddenStatus = %d, want 401", got)
	}
	if got := mappedCause(&loop{"x"}); got != nil {
		t.Fatalf("mappedCause = %v, want nil", got)
	}
}
