package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/auth"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"google.golang.org/genai"
)

// genAgent builds an agent conversation from data: tasks followed by many
// rounds of function calls (with and without ids, many with arguments
// large enough to clear) whose responses come in several forms
// ({"output": ...}, other keys, inline data, thought signatures on the
// part, text beside them). Every step thinks and signs its first call, as
// Gemini 3 does, unless data[1]%3 is 2: then no step thinks or signs,
// as with a model that does not think, and the arguments of old calls
// may be cleared (history.ElideOptions.ClearArguments).
func genAgent(data []byte) []*genai.Content {
	var out []*genai.Content
	lastUser := false // the last content is a user content
	id := 0
	thinks := len(data) < 2 || data[1]%3 != 2
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
			m := &genai.Content{Role: "model"}
			if thinks {
				m.Parts = append(m.Parts, &genai.Part{Text: "thinking", Thought: true, ThoughtSignature: []byte{byte(b)}})
			}
			var rs []*genai.Part
			for k := range n {
				cid := ""
				if (b+k)%2 == 0 {
					cid = "id" + strconv.Itoa(id)
				}
				id++
				args := map[string]any{"k": k}
				if (b+k)%3 != 0 {
					args["path"] = "src/" + strconv.Itoa(b) + ".go"
					args["content"] = strings.Repeat("x := 1\n", 4+b%20)
				}
				c := call(cid, "read_file", args)
				if k == 0 && thinks { // Gemini 3 signs the first call of a step
					c.ThoughtSignature = []byte{'c', byte(b)}
				}
				m.Parts = append(m.Parts, c)
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

// noPersonMessage reports whether contents hold no user message a person
// wrote (text, not function responses, nudges or notices): contents of
// only model turns and the responses to them, or none. A trim leaves such
// contents without any (ErrNoContents), which Gemini refuses as it
// refuses them: the rules drop a model turn that opens the contents, and
// the sweep the responses left without their calls.
func noPersonMessage(contents []*genai.Content) bool {
	msgs, err := ToHistory(contents)
	if err != nil {
		return false
	}
	return !slices.ContainsFunc(msgs, func(m history.Message) bool { return m.Role == history.RoleUser && m.Kind == "" })
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
		all, _, _, err := convertRequest(r.System, r.Contents, nil, nil)
		return all, err
	},
	Validate: func(r request) error { return Validate(r.Contents) },
	Unsendable: func(in, out request) bool {
		return len(out.Contents) == 0 && noPersonMessage(in.Contents)
	},
	Agent: withSystem(nil, genAgent),
	More: []func([]byte) request{
		withSystem(text("", "You are an agent."), genAgent),
		withSystem(nil, gen),
		withSystem(text("", "You are an agent."), gen),
	},
	Notices: []history.Option{history.WithStepTrim(),
		history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[context trimmed]"}),
		history.WithElision(history.ElideOptions{MinTokens: 50})},
	PositionalIDs:  true,
	Exact:          true,
	ClearArguments: true,
	Check:          checkCleared,
	Start:          func() request { return request{System: text("", "sys")} },
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
	// An assistant notice is rendered as a user content: the repeated
	// trims must still recognise it.
	RepeatSets: [][]history.Option{{history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[trimmed]"}),
		history.WithStepTrim(), history.WithElision(history.ElideOptions{MinTokens: -1})}},
}

// checkCleared checks the calls of out, a trim of in, against in's: each
// is the caller's part, or a copy of an unsigned call whose Args are the
// cleared object (the core spares signed steps, which hold reasoning), its
// other fields kept.
func checkCleared(t *testing.T, in, out request, _ history.Result) {
	t.Helper()
	own := map[*genai.Part]bool{}
	for _, c := range in.Contents {
		for _, p := range c.Parts {
			own[p] = true
		}
	}
	for j, c := range out.Contents {
		for _, p := range c.Parts {
			if p.FunctionCall == nil || own[p] {
				continue
			}
			if msg := clearedCall(p, in.Contents); msg != "" {
				t.Fatalf("content %d: %s", j, msg)
			}
		}
	}
}

// clearedCall returns what is wrong with p, a function call part that is
// not the caller's, as the copy of a call of in whose arguments the core
// cleared, or "": it is unsigned, its Args encode to the cleared object,
// and a call of in has its ID and Name and nothing else different.
func clearedCall(p *genai.Part, in []*genai.Content) string {
	if len(p.ThoughtSignature) > 0 {
		return fmt.Sprintf("the signed call %s was cleared", jsonOf(p))
	}
	args, err := jsonText(p.FunctionCall.Args, 0, 0)
	if err != nil || !strings.HasPrefix(args, adaptertest.ClearedPrefix) {
		return fmt.Sprintf("the call %s is not the caller's, nor cleared", jsonOf(p))
	}
	for _, c := range in {
		for _, q := range c.Parts {
			if fc := q.FunctionCall; fc != nil && fc.ID == p.FunctionCall.ID && fc.Name == p.FunctionCall.Name && len(q.ThoughtSignature) == 0 {
				o, oc := *q, *fc
				o.FunctionCall, oc.Args = &oc, p.FunctionCall.Args
				if reflect.DeepEqual(&o, p) {
					return ""
				}
			}
		}
	}
	return fmt.Sprintf("the cleared call %s is not a copy of an unsigned call of the input", jsonOf(p))
}

// TestTrimLadder trims generated agent conversations with elision and step
// trimming at budgets from 1 to above their size, with and without a
// system instruction, also clearing the arguments of old calls: the
// output sends the calls the core counted (the driver compares them one
// by one), cleared ones as copies of unsigned calls (checkCleared).
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

// TestTrimRebuildsResult: the contents Trim returns convert back to exactly
// Result.Messages, over the ladder's conversations (its fixed seeds and
// four generated ones), its option sets (elision and step trimming on) and
// budgets, with and without a system instruction.
// Only what the conversion cannot know differs: synthetic call ids follow
// the contents' new positions, an elided response reads as an ordinary one
// holding the placeholder, and an assistant notice placed before a model
// content is a user content. Result.Modified lists exactly the positions
// whose message differs from the input message Kept names.
func TestTrimRebuildsResult(t *testing.T) {
	gens := append([]func([]byte) request{adapter.Agent}, adapter.More...)
	for _, seed := range adaptertest.Seeds(adaptertest.LadderSeeds, 4) {
		for _, gen := range gens {
			in := gen(seed)
			conv, _, _, err := convertRequest(in.System, in.Contents, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.Sweep(t, seed, history.Estimate(conv, nil), adapter.LadderOptions(), func(t *testing.T, budget int, opts []history.Option) {
				out, res, err := Trim(in.System, in.Contents, budget, opts...)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					t.Fatal(err)
				}
				back, _, err := convert(0, out, opts)
				if err != nil {
					t.Fatal(err)
				}
				if msg := sameMessages(back, res.Messages); msg != "" {
					t.Fatalf("budget %d: %s", budget, msg)
				}
				_, inConv, _, _ := convertRequest(in.System, in.Contents, opts, nil)
				if msg := checkModified(inConv, res); msg != "" {
					t.Fatalf("budget %d: %s", budget, msg)
				}
			})
		}
	}
}

// sameMessages compares back, the conversion of a trim's output, with want,
// its Result.Messages, and returns what differs, or "". Call ids must
// correspond one to one (synthetic ids follow positions); an elided result
// of want reads as an ordinary result in back; a notice of the assistant
// role may read as a user notice (the one before a model content).
func sameMessages(back, want []history.Message) string {
	if len(back) != len(want) {
		return fmt.Sprintf("%d messages converted back, Result has %d", len(back), len(want))
	}
	ids := map[string]string{} // want's id -> back's
	seen := map[string]bool{}  // back's ids mapped to
	sameID := func(w, g string) bool {
		if m, ok := ids[w]; ok {
			return m == g
		}
		if seen[g] {
			return false
		}
		ids[w], seen[g] = g, true
		return true
	}
	for j := range want {
		g, w := back[j].Clone(), want[j].Clone()
		if w.Kind == history.KindElided {
			w.Kind = ""
		}
		if w.Kind == history.KindBreadcrumb && w.Role == history.RoleAssistant && g.Role == history.RoleUser {
			w.Role = history.RoleUser
		}
		if (w.ToolCallID != "" || g.ToolCallID != "") && !sameID(w.ToolCallID, g.ToolCallID) {
			return fmt.Sprintf("message %d answers %q, Result's answers %q, which another message answers", j, g.ToolCallID, w.ToolCallID)
		}
		g.ToolCallID, w.ToolCallID = "", ""
		if len(g.ToolCalls) == len(w.ToolCalls) {
			for c := range w.ToolCalls {
				if !sameID(w.ToolCalls[c].ID, g.ToolCalls[c].ID) {
					return fmt.Sprintf("message %d call %d has id %q for the Result's %q", j, c, g.ToolCalls[c].ID, w.ToolCalls[c].ID)
				}
				g.ToolCalls[c].ID, w.ToolCalls[c].ID = "", ""
			}
		}
		if !reflect.DeepEqual(g, w) {
			return fmt.Sprintf("message %d converts back as %+v, Result has %+v", j, g, w)
		}
	}
	return ""
}

// checkModified checks res.Modified against conv, the converted contents
// res was computed from: a kept message is listed if and only if it differs
// from the message Kept names, and only an elided result or a message whose
// calls the sweep stripped or whose arguments the core cleared may differ.
func checkModified(conv []history.Message, res history.Result) string {
	listed := map[int]bool{}
	for _, j := range res.Modified {
		listed[j] = true
	}
	for j, k := range res.Kept {
		if k < 0 {
			if listed[j] {
				return fmt.Sprintf("Modified lists notice %d", j)
			}
			continue
		}
		m := res.Messages[j]
		changed := !reflect.DeepEqual(m, conv[k])
		if changed != listed[j] {
			return fmt.Sprintf("message %d (input %d) changed: %v, listed in Modified %v: %v", j, k, changed, res.Modified, m)
		}
		if changed && m.Kind != history.KindElided && len(m.ToolCalls) >= len(conv[k].ToolCalls) && !argsCleared(m, conv[k]) {
			return fmt.Sprintf("message %d is changed but neither elided, stripped nor cleared: %+v", j, m)
		}
	}
	return ""
}

// argsCleared reports whether m is orig with the arguments of some of its
// calls cleared, and nothing else changed.
func argsCleared(m, orig history.Message) bool {
	if len(m.ToolCalls) != len(orig.ToolCalls) {
		return false
	}
	o := orig.Clone()
	for c := range o.ToolCalls {
		if a := m.ToolCalls[c].Arguments; strings.HasPrefix(a, adaptertest.ClearedPrefix) {
			o.ToolCalls[c].Arguments = a
		}
	}
	return reflect.DeepEqual(m, o)
}

// jsonOf returns the JSON of v, or the error that prevents it.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// writeArgs are the arguments of a write_file call: large, worth clearing.
func writeArgs(path string) map[string]any {
	return map[string]any{"path": path, "content": strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { w.Write(nil) }\n", 12)}
}

// TestTrimClearedArguments: with ClearArguments, eliding a function
// response also clears the arguments of the call it answers, in a copy of
// the call's part: its Args become {"elided": "[arguments elided: N
// tokens]"}, which encodes back to exactly the JSON the core counted, its
// ID, Name and the part's other fields are kept, its PartialArgs dropped.
// A signed step (a thought signature on its first call) holds reasoning
// and is never cleared: the content is the caller's pointer, though its
// responses are elided. A step whose first call carries no signature
// reads as text (see reasoningType), so its calls are cleared, its signed
// parts kept as they are: Gemini 2.5's signed thought part, and a signed
// call after an unsigned first one, whose signature stays on it. Every
// output counts what the core counted, sends the calls it counted, passes
// Validate, is left alone by a second trim and is what RecoverOverflow
// returns.
func TestTrimClearedArguments(t *testing.T) {
	args := writeArgs("a.go")
	counted, _ := jsonText(args, 0, 0)
	clearedArgs := map[string]any{"elided": "[arguments elided: " + strconv.Itoa(history.EstimateText(counted)) + " tokens]"}
	big := map[string]any{"output": strings.Repeat("wrote 12 lines\n", 60)}
	meta := call("w2", "write_file", writeArgs("a.go"))
	meta.PartMetadata = map[string]any{"source": "runtime"}
	partial := call("w3", "write_file", writeArgs("a.go"))
	partial.FunctionCall.PartialArgs = []*genai.PartialArg{{JsonPath: "$.content", StringValue: "func handler"}}
	signedWrite := func(id, sig string) *genai.Part {
		p := call(id, "write_file", writeArgs("a.go"))
		p.ThoughtSignature = []byte(sig)
		return p
	}
	later := []*genai.Content{text("model", "done"), text("user", "now test it"), modelC(signed("t1", "run_tests", "st")), userC(resp("t1", "run_tests", map[string]any{"output": "ok"}))}

	cases := []struct {
		name string
		step *genai.Content // content 1, answered by content 2, before the current turn
		// cleared holds the index of each part of step whose call is
		// cleared; the others are the caller's parts.
		cleared []int
	}{
		{"no thinking: parallel calls with and without id, part fields kept, partial arguments dropped",
			modelC(&genai.Part{Text: "Writing three files."}, call("w1", "write_file", writeArgs("a.go")), meta, partial, call("", "write_file", writeArgs("a.go"))),
			[]int{1, 2, 3, 4}},
		{"Gemini 3: signed first call, never cleared", modelC(thought("plan the files", ""), signedWrite("g1", "s1"), call("g2", "write_file", writeArgs("a.go"))), nil},
		{"Gemini 3, thoughts not returned: signed first call alone, never cleared", modelC(signedWrite("h1", "s2"), call("h2", "write_file", writeArgs("b.go"))), nil},
		{"Gemini 2.5: signed thought part, unsigned call cleared", modelC(thought("plan the files", "s3"), call("", "write_file", writeArgs("a.go"))), []int{1}},
		{"a signed call after an unsigned first call reads as text: cleared, its signature kept",
			modelC(call("u1", "write_file", writeArgs("a.go")), signedWrite("u2", "s4")), []int{0, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rs []*genai.Part
			for _, p := range tc.step.Parts {
				if fc := p.FunctionCall; fc != nil {
					rs = append(rs, resp(fc.ID, fc.Name, big))
				}
			}
			in := append([]*genai.Content{text("user", "Write the handlers."), tc.step, userC(rs...)}, later...)
			if err := Validate(in); err != nil {
				t.Fatal(err)
			}
			before := adaptertest.JSON(t, in)
			msgs, _ := ToHistory(in)
			eo := history.ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 32}
			all, _ := history.ElideToolResults(msgs, eo)
			budget := history.Estimate(msgs, nil) - all.TokensSaved // every response but the newest elided
			opts := []history.Option{history.WithElision(eo)}

			out, res, err := Trim(nil, in, budget, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if adaptertest.JSON(t, in) != before {
				t.Fatal("Trim modified its input")
			}
			if len(out) != len(in) || res.ElidedResults != len(rs) {
				t.Fatalf("%d of %d contents, %d of %d responses elided", len(out), len(in), res.ElidedResults, len(rs))
			}
			checkSentAsCounted(t, out, res)
			if err := Validate(out); err != nil {
				t.Fatal(err)
			}
			if tc.cleared == nil {
				if out[1] != in[1] {
					t.Fatalf("the signed step is not the caller's: %s", adaptertest.JSON(t, out[1]))
				}
			} else {
				c := out[1]
				if c == in[1] || len(c.Parts) != len(in[1].Parts) {
					t.Fatalf("the step was not rebuilt, or lost parts: %s", adaptertest.JSON(t, c))
				}
				for k, p := range c.Parts {
					orig := in[1].Parts[k]
					if !slices.Contains(tc.cleared, k) {
						if p != orig {
							t.Errorf("part %d is not the caller's: %s", k, adaptertest.JSON(t, p))
						}
						continue
					}
					want := *orig
					fc := *orig.FunctionCall
					fc.Args, fc.PartialArgs = clearedArgs, nil
					want.FunctionCall = &fc
					if p == orig || !reflect.DeepEqual(p, &want) {
						t.Errorf("part %d is\n%s\nwant\n%s", k, adaptertest.JSON(t, p), adaptertest.JSON(t, &want))
					}
					if got, _ := jsonText(p.FunctionCall.Args, 0, 0); !strings.HasPrefix(got, adaptertest.ClearedPrefix) {
						t.Errorf("part %d: the arguments encode to %s", k, got)
					}
				}
			}
			again, _, err := Trim(nil, out, budget, opts...)
			if err != nil || adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
				t.Fatalf("a second trim changed the output (%v)", err)
			}
			// Gemini's count is the library's; its limit makes the target
			// (0.9 of it on a first attempt) the budget.
			rec, rres, err := RecoverOverflow(nil, in, overflowErr(history.Estimate(msgs, nil), budget*10/9+2), 1, opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkSentAsCounted(t, rec, rres)
			if adaptertest.JSON(t, rec) != adaptertest.JSON(t, out) {
				t.Fatalf("RecoverOverflow returns\n%s\nTrim\n%s", adaptertest.JSON(t, rec), adaptertest.JSON(t, out))
			}
		})
	}
}

// checkSentAsCounted checks that out, a trim's output, counts exactly
// what the core counted (res.TokensAfter, no system instruction) and
// sends the calls it counted, one for one, with their names and
// arguments (Gemini's call ids are positional): a cleared call is sent
// cleared, and only then (adaptertest.SentAsCounted).
func checkSentAsCounted(t *testing.T, out []*genai.Content, res history.Result) {
	t.Helper()
	back, err := ToHistory(out)
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.SentAsCounted(t, back, res, true)
}

// corpusRequest maps a conversation of the shared corpus to a Gemini
// request as a Gemini 3 agent would hold it, synthesising what the corpus
// lacks (it was recorded from other providers, thinking dropped):
//
//   - leading system messages become the system instruction, a later one a
//     user content;
//   - an assistant message becomes a model content: its text, its calls
//     (arguments that are not a JSON object under "input"), the first call
//     signed as Gemini 3 signs a step; every other one opens with a thought
//     part, and a text answer signs its last part;
//   - consecutive tool messages become one user content of function
//     responses ({"output": text}), each signed so that the test can see
//     where an elided response's signature goes.
//
// Every signature is unique ("c<content>.<part>"), so that a signature
// found on another part is caught. With thinks false, the model contents
// hold no thought and no signature, as a model that does not think
// returns them (history.ElideOptions.ClearArguments may then clear their
// calls' arguments).
func corpusRequest(conv adaptertest.Conversation, thinks bool) request {
	var r request
	names := map[string]string{} // call id -> name, for tool messages without a name
	sig := func(i, p int) []byte { return []byte("c" + strconv.Itoa(i) + "." + strconv.Itoa(p)) }
	lead := true
	for k, m := range conv.Messages {
		if m.Role == history.RoleSystem && lead {
			if r.System == nil {
				r.System = &genai.Content{}
			}
			r.System.Parts = append(r.System.Parts, &genai.Part{Text: m.Content})
			continue
		}
		lead = false
		i := len(r.Contents)
		switch m.Role {
		case history.RoleSystem, history.RoleUser:
			if m.Content != "" {
				r.Contents = append(r.Contents, text(genai.RoleUser, m.Content))
			}
		case history.RoleAssistant:
			c := &genai.Content{Role: genai.RoleModel}
			if k%2 == 0 && thinks {
				c.Parts = append(c.Parts, &genai.Part{Text: "thinking about step " + strconv.Itoa(k), Thought: true})
			}
			if m.Content != "" {
				c.Parts = append(c.Parts, &genai.Part{Text: m.Content})
			}
			for j, tc := range m.ToolCalls {
				var args map[string]any
				if json.Unmarshal([]byte(tc.Arguments), &args) != nil || args == nil {
					args = map[string]any{"input": tc.Arguments}
				}
				p := &genai.Part{FunctionCall: &genai.FunctionCall{ID: tc.ID, Name: tc.Name, Args: args}}
				if j == 0 && thinks {
					p.ThoughtSignature = sig(i, len(c.Parts))
				}
				names[tc.ID] = tc.Name
				c.Parts = append(c.Parts, p)
			}
			if len(m.ToolCalls) == 0 && len(c.Parts) > 0 && thinks {
				last := len(c.Parts) - 1
				np := *c.Parts[last]
				np.ThoughtSignature = sig(i, last)
				c.Parts[last] = &np
			}
			if len(c.Parts) > 0 {
				r.Contents = append(r.Contents, c)
			}
		case history.RoleTool:
			if k == 0 || conv.Messages[k-1].Role != history.RoleTool {
				r.Contents = append(r.Contents, &genai.Content{Role: genai.RoleUser})
			}
			c := r.Contents[len(r.Contents)-1]
			name := m.Name
			if name == "" {
				name = names[m.ToolCallID]
			}
			c.Parts = append(c.Parts, &genai.Part{
				FunctionResponse: &genai.FunctionResponse{ID: m.ToolCallID, Name: name, Response: map[string]any{"output": m.Content}},
				ThoughtSignature: sig(len(r.Contents)-1, len(c.Parts)),
			})
		}
	}
	return r
}

// TestCorpusGemini trims every conversation of the shared corpus of real
// agent sessions, mapped to Gemini contents with thoughts and signatures
// synthesised (see corpusRequest), and without (a model that does not
// think), at CorpusBudgets with no option and with each option set of the
// ladder (elision and step trimming, elision of large results and step
// trimming, elision alone, configured notices, elision clearing the
// arguments of old calls and step trimming), and counts the trims that
// break a rule (see corpusCounts.check): with signatures, every step is
// signed and no call is cleared; without, the real arguments of old calls
// are. The corpus is small (61 conversations, about 3,000 messages):
// every conversation runs whole at every budget.
func TestCorpusGemini(t *testing.T) {
	for _, thinks := range []bool{true, false} {
		t.Run(fmt.Sprintf("thinks=%v", thinks), func(t *testing.T) { corpusGemini(t, thinks) })
	}
}

func corpusGemini(t *testing.T, thinks bool) {
	convs := adaptertest.Corpus(t, "../..")
	sets := append([][]history.Option{nil}, adapter.LadderOptions()...)
	var c corpusCounts
	for _, conv := range convs {
		in := corpusRequest(conv, thinks)
		if Validate(in.Contents) != nil {
			c.invalidIn++ // Trim repairs what it can: the checks below hold for its output
		}
		before := adaptertest.JSON(t, in)
		parts := map[*genai.Part]string{} // the input's parts and their signatures
		owner := map[string]*genai.Part{} // the part each signature came on
		for _, content := range in.Contents {
			for _, part := range content.Parts {
				parts[part] = string(part.ThoughtSignature)
				owner[string(part.ThoughtSignature)] = part
			}
		}
		for _, budget := range adaptertest.CorpusBudgets(adapter.Tokens(t, in)) {
			for o, opts := range sets {
				c.trims++
				if msg := c.check(in, budget, opts, parts, owner); msg != "" {
					c.violations++
					t.Errorf("%s, budget %d, options %d: %s", conv.Name, budget, o, msg)
				}
			}
		}
		if adaptertest.JSON(t, in) != before {
			t.Errorf("%s: a trim modified the caller's contents", conv.Name)
		}
	}
	t.Logf("%d conversations x %d budgets x %d option sets = %d trims, %d violations; %d inputs invalid as mapped (repaired by the trims); %d trims dropped or swept something; %d signed parts, %d elided responses and %d cleared calls checked",
		len(convs), len(adaptertest.CorpusBudgets(1)), len(sets), c.trims, c.violations, c.invalidIn, c.dropped, c.signed, c.elided, c.cleared)
	if c.trims != len(convs)*len(adaptertest.CorpusBudgets(1))*len(sets) {
		t.Errorf("%d trims run", c.trims)
	}
	if (c.cleared > 0) == thinks {
		t.Errorf("%d calls cleared; want some only without thinking", c.cleared)
	}
}

// corpusCounts counts what TestCorpusGemini checked.
type corpusCounts struct {
	trims, violations, invalidIn, dropped, signed, elided, cleared int
}

// check trims in at budget with opts and returns the first rule the output
// breaks, or "": Trim fails; the output fails Validate (pairing, order,
// Gemini 3's signatures) or counts other than the core counted; it does
// not start with a user content although the trim dropped or swept
// something; a part of it is neither the caller's (parts, with its
// signature unchanged), nor a notice, nor an elided copy of a function
// response carrying the signature of the part it copies (owner finds that
// part by its unique signature), nor a cleared copy of an unsigned call
// (clearedCall).
func (c *corpusCounts) check(in request, budget int, opts []history.Option, parts map[*genai.Part]string, owner map[string]*genai.Part) string {
	out, res, err := Trim(in.System, in.Contents, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return "Trim: " + err.Error()
	}
	if err := Validate(out); err != nil {
		return "Validate: " + err.Error()
	}
	if all, _, _, err := convertRequest(in.System, out, opts, nil); err != nil || history.Estimate(all, nil) != res.TokensAfter {
		return fmt.Sprintf("the output counts %d (%v), the core counted %d", history.Estimate(all, nil), err, res.TokensAfter)
	}
	if res.Trimmed || res.OrphansRemoved > 0 {
		c.dropped++
		if len(out) > 0 && out[0].Role != genai.RoleUser {
			return "the trimmed contents start with a " + out[0].Role + " content"
		}
	}
	turn, step, _ := history.Breadcrumbs(opts...)
	for j, content := range out {
		for _, part := range content.Parts {
			if len(part.ThoughtSignature) > 0 {
				c.signed++
			}
			sig, own := parts[part]
			switch {
			case own:
				if string(part.ThoughtSignature) != sig {
					return fmt.Sprintf("the caller's part carries signature %q, not %q", part.ThoughtSignature, sig)
				}
			case part.FunctionResponse != nil:
				c.elided++
				orig := owner[string(part.ThoughtSignature)]
				if orig == nil || len(part.ThoughtSignature) == 0 || orig.FunctionResponse == nil ||
					orig.FunctionResponse.ID != part.FunctionResponse.ID || orig.FunctionResponse.Name != part.FunctionResponse.Name {
					return fmt.Sprintf("content %d: elided response %q does not carry its part's signature", j, part.FunctionResponse.Name)
				}
			case content.Role == genai.RoleUser && len(content.Parts) == 1 && (part.Text == turn.Content || part.Text == step.Content):
				// a notice
			case part.FunctionCall != nil:
				if msg := clearedCall(part, in.Contents); msg != "" {
					return fmt.Sprintf("content %d: %s", j, msg)
				}
				c.cleared++
			default:
				return fmt.Sprintf("content %d holds a part that is not the caller's", j)
			}
		}
	}
	return ""
}

// The core's overflow classifier driven by the real google.golang.org/genai
// client, on both of its backends (the Gemini API and Vertex AI), against an
// httptest server that answers as Google does: its status, its headers and
// its error bodies, copied from public reports (each case names its source)
// or, for the malformed answers a proxy can give, constructed.

// sdkCase is one answer of the API and what the classifier must make of the
// error the SDK builds from it.
type sdkCase struct {
	name   string
	status int
	// contentType defaults to Google's "application/json; charset=UTF-8".
	contentType string
	body        string
	want        bool
	ov          history.Overflow
	// source is where the body was found (owner/repo#N), or "constructed".
	source string
}

var sdkCases = []sdkCase{
	// Overflows. Google answers with the same envelope on both backends;
	// the Gemini API adds an "errors" array that genai.APIError drops.
	{
		name: "Gemini API: input token count exceeds the maximum", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","errors":[{"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 1196265, Limit: 1048575},
		source: "envelope of google-gemini/gemini-cli#6678; message as quoted in public overflow tests (find_string \"input token count (1196265)\")",
	},
	{
		name: "Gemini API: as reported", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","errors":[{"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 1200293, Limit: 1048576},
		source: "google-gemini/gemini-cli#6678",
	},
	{
		name: "Vertex AI: input token count exceeds the maximum", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (1066750) exceeds the maximum number of tokens allowed (1048575).","status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 1066750, Limit: 1048575},
		source: "dyad-sh/dyad#403 (VertexAIException body)",
	},
	{
		name: "Vertex AI: regional 65536 limit", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (81881) exceeds the maximum number of tokens allowed (65536).","status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 81881, Limit: 65536},
		source: "googleapis/python-genai#2466",
	},
	{
		name: "Vertex AI: limit only", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count exceeds the maximum number of tokens allowed 1048576.","status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Limit: 1048576},
		source: "warpdotdev/warp#15662 (printed by a genai APIError: \"Error 400, Message: ..., Status: INVALID_ARGUMENT, Details: []\")",
	},
	{
		name: "Vertex AI: unable to submit request", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"Unable to submit request because the input token count is 1251952 but model only supports up to 1048576. Reduce the input token count and try again. You can also use the CountTokens API to calculate prompt token count and billable characters. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/learn/models","status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 1251952, Limit: 1048576},
		source: "message of google-gemini/gemini-cli#19727, in the INVALID_ARGUMENT envelope of the cases above",
	},

	// Not overflows.
	{
		name: "HTML 502 from a proxy", status: http.StatusBadGateway, contentType: "text/html",
		body:   "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n",
		source: "the Cloudflare page of anthropics/claude-code#67734, as any proxy in front of Google may answer",
	},
	{
		name: "empty body with 400", status: http.StatusBadRequest,
		source: "constructed",
	},
	{
		name: "truncated JSON", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (1196265) exce`,
		source: "constructed: the first body above, cut by a dropped connection before the phrase",
	},
	{
		name: "429 quota on input token count", status: http.StatusTooManyRequests,
		body:   `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, model: gemini-2.5-pro\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro\nPlease retry in 38.863719904s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]}]}}`,
		source: "continuedev/continue#10085",
	},
	{
		name: "429 resource exhausted", status: http.StatusTooManyRequests,
		body:   `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`,
		source: "googleapis/python-genai#2065",
	},
	{
		name: "429 whose message mentions the context window", status: http.StatusTooManyRequests,
		body:   `{"error":{"code":429,"message":"Too many tokens for the context window of this model this minute: the input token count exceeds the maximum number of tokens allowed (1000000) per minute.","status":"RESOURCE_EXHAUSTED"}}`,
		source: "constructed",
	},
	{
		name: "400 invalid image", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INVALID_ARGUMENT"}}`,
		source: "google-gemini/gemini-cli#5064",
	},
	{
		name: "400 image not valid", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"Provided image is not valid.","errors":[{"message":"Provided image is not valid.","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}`,
		source: "google-gemini/gemini-cli#27244",
	},
}

// backend is one way of building the real client against a test server.
type backend struct {
	name string
	// path is the request path the client must use for model m.
	path func(m string) string
	// auth checks the credentials of a request.
	auth func(r *http.Request) bool
	new  func(ctx context.Context, baseURL string) (*genai.Client, error)
}

// fakeToken is an OAuth2 token source that needs no network: Vertex AI
// normally takes Application Default Credentials, which would look for a
// service account or the metadata server.
type fakeToken struct{}

func (fakeToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: "ya29.test-token", Type: "Bearer"}, nil
}

var backends = []backend{
	{
		name: "GeminiAPI",
		path: func(m string) string { return "/v1beta/models/" + m + ":generateContent" },
		auth: func(r *http.Request) bool { return r.Header.Get("X-Goog-Api-Key") == "test-key" },
		new: func(ctx context.Context, baseURL string) (*genai.Client, error) {
			return genai.NewClient(ctx, &genai.ClientConfig{
				APIKey:      "test-key",
				Backend:     genai.BackendGeminiAPI,
				HTTPOptions: genai.HTTPOptions{BaseURL: baseURL},
			})
		},
	},
	{
		name: "VertexAI",
		path: func(m string) string {
			return "/v1beta1/projects/test-project/locations/us-central1/publishers/google/models/" + m + ":generateContent"
		},
		auth: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer ya29.test-token" },
		new: func(ctx context.Context, baseURL string) (*genai.Client, error) {
			return genai.NewClient(ctx, &genai.ClientConfig{
				Backend:     genai.BackendVertexAI,
				Project:     "test-project",
				Location:    "us-central1",
				Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: fakeToken{}}),
				HTTPOptions: genai.HTTPOptions{BaseURL: baseURL},
			})
		},
	},
}

const model = "gemini-2.5-pro"

// serve starts a server that answers every request with tc, checks that the
// client sent it where and as b says, and counts the requests it gets.
func serve(t *testing.T, b backend, tc sdkCase, stream bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	want := b.path(model)
	if stream {
		want = strings.TrimSuffix(want, ":generateContent") + ":streamGenerateContent"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != want || !b.auth(r) {
			t.Errorf("unexpected request %s %s (want path %s and the %s credentials)", r.Method, r.URL, want, b.name)
		}
		// The headers Google's front end sends with an error
		// (google-gemini/gemini-cli#3859).
		adaptertest.Answer(w, tc.status, tc.contentType, "application/json; charset=UTF-8", tc.body, "Vary", "Origin, X-Origin, Referer", "Server", "ESF")
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// checkSDKError asserts that err is the SDK's genai.APIError for tc and that
// the core classifies it, bare and wrapped, as tc says.
func checkSDKError(t *testing.T, tc sdkCase, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("the request succeeded")
	}
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("genai returned %T, not genai.APIError: %v", err, err)
	}
	if apiErr.Code != tc.status {
		t.Fatalf("APIError.Code %d, want %d", apiErr.Code, tc.status)
	}
	for _, e := range []error{err, fmt.Errorf("agent turn 3: %w", err), fmt.Errorf("retry: %w", fmt.Errorf("agent turn 3: %w", err))} {
		ov, ok := history.ParseOverflow(e)
		if ok != tc.want || ov != tc.ov {
			t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s)\nerror: %v", ov, ok, tc.ov, tc.want, tc.source, e)
		}
		if history.IsContextOverflow(e) != tc.want {
			t.Fatalf("IsContextOverflow disagrees with ParseOverflow\nerror: %v", e)
		}
	}
}

func TestOverflowFromGenAIClient(t *testing.T) {
	for _, b := range backends {
		for _, tc := range sdkCases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				srv, calls := serve(t, b, tc, false)
				client, err := b.new(ctx, srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				_, err = client.Models.GenerateContent(ctx, model, genai.Text("hello"), nil)
				checkSDKError(t, tc, err)
				if n := calls.Load(); n != 1 {
					t.Fatalf("the server got %d requests, want 1", n)
				}
			})
		}
	}
}

// An error status answered to a streaming request comes out of the
// iterator, as the same genai.APIError.
func TestOverflowFromGenAIStream(t *testing.T) {
	for _, b := range backends {
		for _, tc := range sdkCases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				srv, _ := serve(t, b, tc, true)
				client, err := b.new(ctx, srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				var got error
				for resp, err := range client.Models.GenerateContentStream(ctx, model, genai.Text("hello"), nil) {
					if err != nil {
						got = err
						break
					}
					t.Fatalf("got a response: %+v", resp)
				}
				checkSDKError(t, tc, got)
			})
		}
	}
}

// A 429 whose only sign of a rate limit is its status, with an overflow
// phrase in its message (a gateway forwarding the provider's message under
// its own status): genai.APIError keeps the status in a field (Code), not
// behind a method, and Error() prints the bare number ("Error 429, ...").
// The core reads the status from that field and rules the overflow out.
func TestOverflowGenAIStatusField(t *testing.T) {
	tc := sdkCase{
		status: http.StatusTooManyRequests,
		body:   `{"error":{"code":429,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)."}}`,
		want:   false, // the core reads the 429 from APIError.Code
		source: "constructed",
	}
	ctx := context.Background()
	for _, b := range backends {
		srv, _ := serve(t, b, tc, false)
		client, err := b.new(ctx, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.Models.GenerateContent(ctx, model, genai.Text("hello"), nil)
		checkSDKError(t, tc, err)
	}
}
