package gemini

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"google.golang.org/genai"
)

// genAgent builds an agent conversation from data: tasks followed by many
// rounds of function calls (with and without ids) whose responses come in
// several forms ({"output": ...}, other keys, inline data, thought
// signatures on the part, text beside them).
func genAgent(data []byte) []*genai.Content {
	var out []*genai.Content
	lastUser := false // the last content is a user content
	id := 0
	for _, v := range data {
		b := int(v)
		switch {
		case b%7 == 0 || len(out) == 0:
			out = append(out, text("user", adaptertest.TaskText(b)))
			lastUser = true
		case b%7 == 1:
			out = append(out, text("model", adaptertest.NoteText(b)))
			lastUser = false
		default:
			if !lastUser {
				out = append(out, text("user", "go on"))
			}
			n := 1 + b%3
			m := &genai.Content{Role: "model", Parts: []*genai.Part{{Text: "thinking", Thought: true, ThoughtSignature: []byte{byte(b)}}}}
			var rs []*genai.Part
			for k := range n {
				cid := ""
				if (b+k)%2 == 0 {
					cid = "id" + strconv.Itoa(id)
				}
				id++
				m.Parts = append(m.Parts, call(cid, "read_file", map[string]any{"k": k}))
				body := adaptertest.OutputText(b, k)
				var r *genai.Part
				switch (b + k) % 4 {
				case 0:
					r = resp(cid, "read_file", map[string]any{"output": body})
				case 1:
					r = resp(cid, "read_file", map[string]any{"content": body, "lines": 3})
				case 2:
					r = resp(cid, "read_file", map[string]any{"error": body})
					r.ThoughtSignature = []byte("sig")
				default:
					r = resp(cid, "read_file", map[string]any{"output": body})
					r.FunctionResponse.Parts = []*genai.FunctionResponsePart{{InlineData: &genai.FunctionResponseBlob{MIMEType: "application/pdf", Data: []byte(body)}}}
				}
				rs = append(rs, r)
			}
			if b%5 == 0 {
				rs = append(rs, &genai.Part{Text: "note"})
			}
			out = append(out, m, &genai.Content{Role: "user", Parts: rs})
			lastUser = true
		}
	}
	return out
}

// request is what the shared test drivers trim: the contents and the
// system instruction Trim takes beside them.
type request struct {
	System   *genai.Content
	Contents []*genai.Content
}

// withSystem turns a generator of contents into one of requests with the
// system instruction sys (nil for none).
func withSystem(sys *genai.Content, gen func([]byte) []*genai.Content) func([]byte) request {
	return func(data []byte) request { return request{sys, gen(data)} }
}

// adapter describes this package to the shared ladder and repeated-trim
// drivers: the system instruction apart, function responses split out of
// their contents, call ids that are synthetic where the SDK has none, and
// an output that counts exactly what the core counted.
var adapter = adaptertest.Adapter[request]{
	Trim: func(r request, budget int, opts ...history.Option) (request, history.Result, error) {
		out, res, err := Trim(r.System, r.Contents, budget, opts...)
		return request{r.System, out}, res, err
	},
	ToHistory: func(r request) ([]history.Message, error) {
		all, _, _, err := convertRequest(r.System, r.Contents, nil)
		return all, err
	},
	Validate: func(r request) error { return Validate(r.Contents) },
	Agent:    withSystem(nil, genAgent),
	More: []func([]byte) request{
		withSystem(text("", "You are an agent."), genAgent),
		withSystem(nil, gen),
		withSystem(text("", "You are an agent."), gen),
	},
	Notices: []history.Option{history.WithStepTrim(),
		history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[context trimmed]"}),
		history.WithElision(history.ElideOptions{MinTokens: 50})},
	PositionalIDs: true,
	Exact:         true,
	Start:         func() request { return request{System: text("", "sys")} },
	Task: func(r request, s string) request {
		return request{r.System, slices.Concat(r.Contents, []*genai.Content{text("user", s)})}
	},
	Step: func(r request, id, output string) request {
		return request{r.System, slices.Concat(r.Contents, []*genai.Content{
			{Role: "model", Parts: []*genai.Part{call(id, "run", nil)}},
			{Role: "user", Parts: []*genai.Part{resp(id, "run", map[string]any{"output": output})}},
		})}
	},
	Len: func(r request) int { return len(r.Contents) },
	// An assistant notice is a model content unless a model content
	// follows it.
	RepeatSets: [][]history.Option{{history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[trimmed]"}),
		history.WithStepTrim(), history.WithElision(history.ElideOptions{MinTokens: -1})}},
}

// TestTrimLadder trims generated agent conversations with elision and step
// trimming at budgets from 1 to above their size, with and without a
// system instruction.
func TestTrimLadder(t *testing.T) { adapter.Ladder(t) }

func FuzzTrimLadder(f *testing.F) { adapter.FuzzLadder(f) }

// TestTrimElidedForms: an elided function response keeps its id, name and
// part fields, answers {"output": placeholder} with no parts of its own,
// and stays in its content with the other parts untouched.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	r1 := resp("a", "read", map[string]any{"output": big})
	r1.ThoughtSignature = []byte("sig")
	r2 := resp("", "grep", map[string]any{"matches": []any{big}})
	r2.FunctionResponse.Parts = []*genai.FunctionResponsePart{{InlineData: &genai.FunctionResponseBlob{MIMEType: "image/png", Data: adaptertest.PNG(t, 64, 64)}}}
	note := &genai.Part{Text: "continue"}
	in := []*genai.Content{
		text("user", "task"),
		{Role: "model", Parts: []*genai.Part{call("a", "read", nil), call("", "grep", nil)}},
		{Role: "user", Parts: []*genai.Part{r1, r2, note}},
		text("model", "done"),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.Name + "]" }
	out, res, err := Trim(nil, in, 120, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 2 || len(out) != len(in) {
		t.Fatalf("elided %d of 2 responses, %d contents", res.ElidedResults, len(out))
	}
	want := `{"parts":[` +
		`{"functionResponse":{"id":"a","name":"read","response":{"output":"[elided read]"}},"thoughtSignature":"c2ln"},` +
		`{"functionResponse":{"name":"grep","response":{"output":"[elided grep]"}}},` +
		`{"text":"continue"}],"role":"user"}`
	if got := adaptertest.JSON(t, out[2]); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if out[2].Parts[2] != note {
		t.Error("the text part beside the responses is not the caller's")
	}
	for _, j := range []int{0, 1, 3} {
		if out[j] != in[j] {
			t.Errorf("content %d is not the caller's", j)
		}
	}
	if r1.FunctionResponse.Response["output"] != big || len(r2.FunctionResponse.Parts) != 1 {
		t.Error("the caller's parts were modified")
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
}

// TestRepeatedTrimNoStacking runs an agent loop that replaces its history
// with each trim's output: notices never stack, and the latest task is
// never lost to an old step notice.
func TestRepeatedTrimNoStacking(t *testing.T) { adapter.Repeat(t) }

// TestGenerators: the conversations the drivers trim hold what they need.
func TestGenerators(t *testing.T) { adapter.CheckGenerators(t) }
