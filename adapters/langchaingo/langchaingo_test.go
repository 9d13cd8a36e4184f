package langchaingo

import (
	"bytes"
	"encoding/base64"
	"errors"
	"reflect"
	"slices"
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
