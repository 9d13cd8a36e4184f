package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
	"google.golang.org/genai"
)

// Gemini's rules on the order of contents and on thought signatures: what
// Validate reports, what Trim repairs by dropping, and how thoughts and
// signatures count. Each rule comes with the error Gemini answers a request
// that breaks it (HTTP 400 INVALID_ARGUMENT), as reported publicly.

// The bodies Gemini answers with, each with its source.
const (
	// bodyOrder: a function call turn with no user turn (a prompt or
	// function responses) right before it: first in the contents
	// (google-gemini/gemini-cli#11814, "when the sent conversation history
	// starts with a function call"; lbjlaq/Antigravity-Manager#3396) or
	// after a model turn (earendil-works/pi#471). Body as quoted in
	// continuedev/continue#11164 (Gemini 3.1 Pro).
	bodyOrder = `{"error":{"code":400,"message":"Please ensure that function call turn comes immediately after a user turn or after a function response turn.","status":"INVALID_ARGUMENT"}}`
	// bodyCount: responses that do not answer the calls of the turn before
	// them one for one. Body of google-gemini/gemini-cli#18509
	// (gemini-3-flash-preview), with the "errors" array the Gemini API adds.
	bodyCount = `{"error":{"code":400,"message":"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.","errors":[{"message":"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}`
	// msgSignature: a step of the current turn whose first function call
	// has no thought signature, Gemini API (Gemini 3). Message of
	// lbjlaq/Antigravity-Manager#2157 (quoted in a code block, backticks
	// included); the same text in nearai/ironclaw#1510 ("function call
	// default_api:memory_write , position 16", gemini-3.1-flash-lite-preview)
	// and langgenius/dify-official-plugins#2088 (gemini-3-pro-preview,
	// "400 INVALID_ARGUMENT"). Its arguments are the function's name and
	// the 1-based position of the model content: a first step after one
	// prompt is "position 2" in manthanabc/paws#103, niki914/zafiro#100,
	// nanbingxyz/5ire#405 and csells/dartantic#86.
	msgSignature = "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
	// msgSignatureVertex: the same rule on Vertex AI, message of
	// junjiem/dify-plugin-agent-mcp_sse#143 (Gemini 3 Flash), which names
	// the content as "the 2. content block".
	msgSignatureVertex = "Unable to submit request because function call `%s` in the %d. content block is missing a `thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
)

// signed returns a function call part carrying signature sig.
func signed(id, name, sig string) *genai.Part {
	p := call(id, name, map[string]any{"q": name})
	p.ThoughtSignature = []byte(sig)
	return p
}

// thought returns a thought part, signed when sig is not empty.
func thought(text, sig string) *genai.Part {
	p := &genai.Part{Text: text, Thought: true}
	if sig != "" {
		p.ThoughtSignature = []byte(sig)
	}
	return p
}

func modelC(parts ...*genai.Part) *genai.Content {
	return &genai.Content{Role: genai.RoleModel, Parts: parts}
}
func userC(parts ...*genai.Part) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: parts}
}

// TestValidateSignatures: the signature rule of Gemini 3
// (https://ai.google.dev/gemini-api/docs/thought-signatures, "Validation"):
// in the current turn, since the last user content that is not only
// function responses, the first function call of each step carries its
// signature; parallel calls carry one, on the first; earlier turns are not
// checked. Gemini answers a request that breaks it with msgSignature (Gemini
// API) or msgSignatureVertex (Vertex AI), whose position is the offending
// content's index plus one.
func TestValidateSignatures(t *testing.T) {
	prompt := text("user", "what is the weather in Paris and London?")
	cases := []struct {
		name   string
		in     []*genai.Content
		bad    int // index of the offending content, -1 for none
		part   int
		reason string
	}{
		{"first step unsigned", []*genai.Content{
			prompt, modelC(thought("plan", "t1"), call("", "get_weather", nil)), userC(resp("", "get_weather", nil)),
		}, 1, 1, "the first step after one prompt: Gemini's position 2 (paws#103, 5ire#405, dartantic#86)"},
		{"signed step", []*genai.Content{
			prompt, modelC(thought("plan", ""), signed("", "get_weather", "s1")), userC(resp("", "get_weather", nil)),
		}, -1, 0, "the signature is on the call"},
		{"parallel calls sign the first only", []*genai.Content{
			prompt, modelC(signed("a", "get_weather", "s1"), call("b", "get_weather", nil)),
			userC(resp("a", "get_weather", nil), resp("b", "get_weather", nil)),
		}, -1, 0, "docs: parallel calls, the signature is on the first functionCall part only"},
		{"parallel calls, first unsigned", []*genai.Content{
			prompt, modelC(call("a", "get_weather", nil), signed("b", "get_weather", "s1")),
			userC(resp("a", "get_weather", nil), resp("b", "get_weather", nil)),
		}, 1, 0, "the first functionCall part of the step must carry it"},
		{"every step of the turn", []*genai.Content{
			prompt, modelC(signed("", "check_flight", "s1")), userC(resp("", "check_flight", nil)),
			modelC(call("", "book_taxi", nil)), userC(resp("", "book_taxi", nil)),
		}, 3, 0, "docs: sequential calls, each step has a signature and all must be returned"},
		{"earlier turn not checked", []*genai.Content{
			prompt, modelC(call("", "get_weather", nil)), userC(resp("", "get_weather", nil)), text("model", "sunny"),
			text("user", "and tomorrow?"), modelC(signed("", "get_weather", "s2")), userC(resp("", "get_weather", nil)),
		}, -1, 0, "docs: only the current turn is validated"},
		{"responses do not open a turn", []*genai.Content{
			prompt, modelC(signed("", "a", "s1")), userC(resp("", "a", nil)), modelC(call("", "b", nil)), userC(resp("", "b", nil)),
		}, 3, 0, "docs: the current turn starts at a user message with standard content, never at a functionResponse"},
		{"text beside responses opens a turn", []*genai.Content{
			prompt, modelC(call("", "a", nil)), userC(resp("", "a", nil), &genai.Part{Text: "also check b"}),
			modelC(signed("", "b", "s1")), userC(resp("", "b", nil)),
		}, -1, 0, "a user content with text is standard content: the step before it is an earlier turn"},
		{"no signature at all", []*genai.Content{
			prompt, modelC(call("", "a", nil)), userC(resp("", "a", nil)),
		}, -1, 0, "a request without signatures is one for a model that does not think"},
		{"signature on the thought only", []*genai.Content{
			prompt, modelC(thought("plan", "t1"), call("", "a", nil), signed("", "b", "s1")), userC(resp("", "a", nil), resp("", "b", nil)),
		}, 1, 1, "Gemini 2.5's shape: Gemini 3 wants it on the first call (ErrMissingSignature lets a 2.5 caller tell)"},
		{"documented dummy signature", []*genai.Content{
			prompt, modelC(signed("", "a", "skip_thought_signature_validator")), userC(resp("", "a", nil)),
		}, -1, 0, "docs: the value for calls no Gemini 3 model wrote passes"},
		{"signature on a response only", []*genai.Content{
			prompt, modelC(call("", "a", nil)), userC(&genai.Part{FunctionResponse: &genai.FunctionResponse{Name: "a"}, ThoughtSignature: []byte("x")}),
		}, -1, 0, "only the model's signatures make a thinking request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(c.in)
			if c.bad < 0 {
				if err != nil {
					t.Fatalf("%v (%s)", err, c.reason)
				}
				return
			}
			var se *SignatureError
			if !errors.As(err, &se) || !errors.Is(err, ErrMissingSignature) || errors.Is(err, ErrUnpaired) {
				t.Fatalf("err = %v, want a *SignatureError (%s)", err, c.reason)
			}
			name := c.in[se.Index].Parts[se.Part].FunctionCall.Name
			if se.Index != c.bad || se.Part != c.part || se.Name != name || !strings.HasPrefix(err.Error(), "history/gemini: ") {
				t.Errorf("got %+v (%v), want content %d part %d (%s)", *se, err, c.bad, c.part, c.reason)
			}
		})
	}
}

// dropCases are the histories Gemini rejects for their order or for a lost
// signature, as runtimes produced them, with the contents Trim keeps of
// them at a budget that keeps everything.
var dropCases = []struct {
	name   string
	in     []*genai.Content
	keep   []int // indices of the contents kept whole, in order
	source string
	valid  bool // Validate accepts the input
}{
	{"starts with a model text", []*genai.Content{
		text("model", "Hello! How can I help?"), text("user", "hi"), text("model", "hey"),
	}, []int{1, 2}, "NousResearch/hermes-agent#55427: a history resumed from an assistant turn, reported rejected with \"Please ensure that multiturn requests alternate between user and model\"", true},
	{"starts with a function call turn", []*genai.Content{
		modelC(signed("a", "read", "s1")), userC(resp("a", "read", map[string]any{"output": "x"})),
		text("user", "now summarise"), text("model", "done"),
	}, []int{2, 3}, "google-gemini/gemini-cli#11814 (bodyOrder): a history cut before the call's prompt", false},
	{"starts with a model text, then a call turn", []*genai.Content{
		text("model", "Hello! How can I help?"), modelC(signed("a", "read", "s1")), userC(resp("a", "read", nil)),
		text("user", "thanks"),
	}, []int{3}, "bodyOrder: the call turn follows a model turn; without it the text would still precede nothing but the prompt", false},
	{"model text left before a call turn by the sweep", []*genai.Content{
		text("user", "go"), modelC(&genai.Part{Text: "let me look"}, call("a", "read", nil)),
		userC(resp("zzz", "read", nil)), // answers nothing: call a is stripped, its content keeps only its text
		modelC(call("b", "grep", nil)), userC(resp("b", "grep", nil)),
	}, []int{0, 3, 4}, "earendil-works/pi#471 (bodyOrder): a model turn right before a call turn", false},
	{"two model contents in a row", []*genai.Content{
		text("user", "go"), text("model", "thinking aloud"), modelC(call("b", "grep", nil)), userC(resp("b", "grep", nil)),
	}, []int{0, 2, 3}, "bodyOrder: the first model content has no call for anything to answer", false},
	{"signed call without its response, its sibling answered", []*genai.Content{
		text("user", "go"), modelC(thought("plan", ""), signed("a", "read", "s1"), call("b", "grep", nil)),
		userC(resp("b", "grep", nil)), text("model", "done"),
	}, []int{0, 3}, "stripping the signed call would leave call b first and unsigned (msgSignature)", false},
	{"pending signed call", []*genai.Content{
		text("user", "go"), modelC(thought("plan", ""), &genai.Part{Text: "reading"}, signed("a", "read", "s1")),
	}, []int{0}, "a step whose response never came: its signature goes with its call, and the step with them", false},
	{"thinking step lost its first call's response", []*genai.Content{
		text("user", "go"), modelC(thought("plan", "t1"), call("a", "read", nil), call("b", "grep", nil)),
		userC(resp("b", "grep", nil)), text("model", "done"),
	}, []int{0, 3}, "Gemini 2.5's shape: its thought is bound to the step; call b alone would be a new first call", false},
}

// TestTrimDropsWhatGeminiRejects replays the histories Gemini rejects for
// their order or for a lost signature, as runtimes produced them, and
// checks that Trim repairs them by dropping whole contents (never by
// inventing one), at a budget that keeps everything: the output validates,
// starts with a user content, holds the caller's own contents or parts,
// and Result.Messages reads as the output does.
func TestTrimDropsWhatGeminiRejects(t *testing.T) {
	for _, c := range dropCases {
		t.Run(c.name, func(t *testing.T) {
			if err := Validate(c.in); (err == nil) != c.valid {
				t.Fatalf("Validate(input) = %v: it does not reproduce %s", err, c.source)
			}
			before := adaptertest.JSON(t, c.in)
			out, res, err := Trim(nil, c.in, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("output fails Validate: %v\n%s", err, adaptertest.JSON(t, out))
			}
			if len(out) != len(c.keep) {
				t.Fatalf("got %s, want contents %v (%s)", adaptertest.JSON(t, out), c.keep, c.source)
			}
			for j, i := range c.keep {
				if out[j] != c.in[i] {
					t.Errorf("content %d is not input %d, the caller's pointer: %s", j, i, adaptertest.JSON(t, out[j]))
				}
			}
			if out[0].Role != genai.RoleUser || res.OrphansRemoved == 0 || res.Trimmed {
				t.Errorf("starts with %q, %d orphans removed, trimmed %v: want a user content, a sweep, no trim", out[0].Role, res.OrphansRemoved, res.Trimmed)
			}
			back, err := ToHistory(out)
			if err != nil || history.Estimate(back, nil) != res.TokensAfter {
				t.Errorf("output counts %d (%v), Result says %d", history.Estimate(back, nil), err, res.TokensAfter)
			}
			if adaptertest.JSON(t, c.in) != before {
				t.Error("Trim modified its input")
			}
		})
	}
}

// TestTrimKeepsSignatures: a content the sweep cuts down keeps its parts
// as they were, each signature on its own part: the signed first call of
// a step stays with its signature when an unsigned sibling is stripped,
// and an elided function response keeps the signature of its part.
func TestTrimKeepsSignatures(t *testing.T) {
	first := signed("a", "read", "s1")
	th := thought("plan", "t1")
	r := resp("a", "read", map[string]any{"output": strings.Repeat("data ", 400)})
	r.ThoughtSignature = []byte("on the response")
	in := []*genai.Content{
		text("user", "go"),
		modelC(th, first, call("b", "grep", nil)),
		userC(r), // call b is unanswered: stripped
		text("model", "done"),
	}
	msgs, _ := ToHistory(in)
	out, res, err := Trim(nil, in, history.Estimate(msgs, nil)-50, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || !slices.Equal(out[1].Parts, []*genai.Part{th, first}) {
		t.Fatalf("model content = %s, want the thought and signed call a, the caller's parts", adaptertest.JSON(t, out[1]))
	}
	if res.ElidedResults != 1 || out[2].Parts[0] == r || string(out[2].Parts[0].ThoughtSignature) != "on the response" {
		t.Errorf("elided response = %s, want a copy with the part's signature", adaptertest.JSON(t, out[2]))
	}
	if string(first.ThoughtSignature) != "s1" || string(th.ThoughtSignature) != "t1" {
		t.Error("Trim modified the caller's signatures")
	}
}

// TestThoughtsAsReasoning: thoughts and signatures count, a signature as
// the base64 text the request carries (Gemini: "Thought signatures will
// increase the input tokens you are charged when sent back as part of the
// request", https://ai.google.dev/gemini-api/docs/thinking, Pricing). They
// are reasoning parts, except in a content whose first call carries no
// signature, which Gemini 3 rejects in the current turn: there they count
// as text, so that step trimming does not keep the step as the thinking
// step of the tool loop.
func TestThoughtsAsReasoning(t *testing.T) {
	sig := []byte{0xff, 0x00, 0x10, 'g'}
	b64 := base64.StdEncoding.EncodeToString(sig)
	cases := []struct {
		name string
		c    *genai.Content
		want []history.Part
	}{
		{"signed call", modelC(thought("plan", ""), &genai.Part{FunctionCall: &genai.FunctionCall{Name: "f"}, ThoughtSignature: sig}),
			[]history.Part{{Type: history.PartReasoning, Text: "plan"}, {Type: history.PartReasoning, Text: b64}}},
		{"unsigned first call", modelC(&genai.Part{Text: "plan", Thought: true, ThoughtSignature: sig}, call("", "f", nil)),
			[]history.Part{{Type: history.PartText, Text: "plan"}, {Type: history.PartText, Text: b64}}},
		{"text answer", modelC(thought("plan", ""), &genai.Part{Text: "done", ThoughtSignature: sig}),
			[]history.Part{{Type: history.PartReasoning, Text: "plan"}, {Type: history.PartReasoning, Text: b64}}},
		{"signature alone", modelC(&genai.Part{ThoughtSignature: sig}),
			[]history.Part{{Type: history.PartReasoning, Text: b64}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs, err := ToHistory([]*genai.Content{text("user", "go"), c.c, userC(resp("", "f", nil))})
			if err != nil {
				t.Fatal(err)
			}
			if got := msgs[1].Parts; !slices.Equal(got, c.want) {
				t.Errorf("parts = %+v, want %+v", got, c.want)
			}
		})
	}
	// The signature costs what its text costs.
	prompt := text("user", "go")
	with, _ := ToHistory([]*genai.Content{prompt, modelC(&genai.Part{Text: "x", ThoughtSignature: []byte(strings.Repeat("sig", 300))})})
	without, _ := ToHistory([]*genai.Content{prompt, text("model", "x")})
	if d := history.Estimate(with, nil) - history.Estimate(without, nil); d < history.EstimateText(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("sig", 300)))) {
		t.Errorf("a 900-byte signature adds %d tokens", d)
	}
}

// TestStepTrimKeepsTheCurrentTurnSigned: every step step trimming keeps in
// the current turn is signed. A step whose first call is unsigned
// (a call another model wrote) lies before the current turn of the input
// when a later user content (text beside responses) opened one; if that
// content is dropped with its step, the kept first step would enter the
// current turn, where Gemini 3 rejects it (msgSignature). Such a step
// does not count as thinking, so it is dropped like any old step.
func TestStepTrimKeepsTheCurrentTurnSigned(t *testing.T) {
	big := map[string]any{"output": strings.Repeat("line of output\n", 200)}
	in := []*genai.Content{
		text("user", "fix the build"),
		modelC(thought("look first", "t0"), call("", "ls", nil)), // written by another model: no signature on the call
		userC(resp("", "ls", big)),
		modelC(call("", "ci_status", nil)), userC(resp("", "ci_status", big), &genai.Part{Text: "the build is on CI, not local"}),
		modelC(thought("check CI", ""), signed("", "ci_logs", "s1")), userC(resp("", "ci_logs", big)),
		modelC(signed("", "read", "s2")), userC(resp("", "read", big)),
		modelC(signed("", "edit", "s3")), userC(resp("", "edit", map[string]any{"output": "ok"})),
	}
	if err := Validate(in); err != nil {
		t.Fatalf("the input is valid for Gemini 3: %v", err)
	}
	msgs, _ := ToHistory(in)
	total := history.Estimate(msgs, nil)
	for budget := total / 10; budget <= total; budget += total / 40 {
		out, res, err := Trim(nil, in, budget, history.WithStepTrim())
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatal(err)
		}
		if err := Validate(out); err != nil {
			t.Fatalf("budget %d (dropped %d steps): %v\n%s", budget, res.DroppedSteps, err, adaptertest.JSON(t, out))
		}
	}
	// Gemini binds a thought signature to its own call, not to the tool
	// loop (Anthropic's rule): the signed thinking step goes like any old
	// step, and what is kept is still valid.
	out, res, err := Trim(nil, slices.Concat(in[:1], in[5:]), total/3, history.WithStepTrim())
	if (err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge)) || res.DroppedSteps == 0 || out[2] == in[5] {
		t.Errorf("dropped %d steps (%v): %s; want the thinking step dropped with the oldest", res.DroppedSteps, err, adaptertest.JSON(t, out))
	}
	if err := Validate(out); err != nil {
		t.Errorf("the trimmed contents are invalid for Gemini 3: %v", err)
	}
}

// genNative builds a Gemini history from fuzz input, in every shape the
// rules of this package are about: user prompts; model answers, some with
// thoughts, some signing their last part; steps of one to three parallel
// calls (with and without ids, repeated names), most signing their first
// call as Gemini 3 does, some not (calls another model wrote), some
// thinking; their responses in any order, with text beside them, and
// defects: a response missing, one answering nothing, a wrong id, a step
// with no response at all, two model contents in a row, a model content
// first. Many calls carry arguments worth clearing
// (history.ElideOptions.ClearArguments). Every signature is unique ("s"
// and a number), responses are all signed (Gemini does not sign them, but
// an elided response must keep whatever its part carries), so that a
// signature can be traced to its part.
func genNative(data []byte) []*genai.Content {
	seed := adaptertest.Bytes(data)
	n := 0
	sig := func() []byte { n++; return []byte("s" + strconv.Itoa(n)) }
	var out []*genai.Content
	names := []string{"f", "g", "f", "h"}
	// Each content takes two bytes: b chooses its kind and sizes, v its
	// flags, bit by bit.
	for step := 0; len(seed) > 0 && step < 60; step++ {
		b, v := seed.Byte(), seed.Byte()
		bit := func(i int) bool { return v>>i&1 == 1 }
		switch k := b % 10; {
		case k < 2:
			out = append(out, text(genai.RoleUser, "prompt "+adaptertest.Words(b)))
		case k < 3:
			m := modelC(&genai.Part{Text: "answer " + adaptertest.Words(v)})
			if bit(0) {
				m.Parts = append([]*genai.Part{{Text: "ponder", Thought: true}}, m.Parts...)
			}
			if bit(1) {
				m.Parts[len(m.Parts)-1].ThoughtSignature = sig()
			}
			out = append(out, m)
		default:
			m := modelC()
			if bit(0) {
				th := &genai.Part{Text: "plan " + adaptertest.Words(b), Thought: true}
				if bit(1) {
					th.ThoughtSignature = sig() // Gemini 2.5 signs the first part
				}
				m.Parts = append(m.Parts, th)
			}
			signFirst := v%5 != 0
			var rs []*genai.Part
			for c := range 1 + (v>>2)%3 {
				id := ""
				if (b>>c)&1 == 1 {
					id = "id" + strconv.Itoa(step) + "." + strconv.Itoa(c)
				}
				name := names[(b/10+c*v)%len(names)]
				args := map[string]any{"c": c}
				if (b+c)%3 != 0 {
					args["path"] = "src/" + adaptertest.Words(b+c) // worth clearing
				}
				p := call(id, name, args)
				if c == 0 && signFirst {
					p.ThoughtSignature = sig()
				}
				m.Parts = append(m.Parts, p)
				r := resp(id, name, map[string]any{"output": adaptertest.OutputText(b, c)})
				r.ThoughtSignature = sig()
				rs = append(rs, r)
			}
			switch d := (b/10 + v/4) % 14; {
			case d == 0 && len(rs) > 1:
				rs = rs[1:] // the first call unanswered
			case d == 1:
				rs = rs[:len(rs)-1] // the last call unanswered
			case d == 2:
				rs = append(rs, resp("", "orphan", nil))
			case d == 3:
				rs[0] = resp("wrong", rs[0].FunctionResponse.Name, nil)
				rs[0].ThoughtSignature = sig()
			case d == 4:
				rs = nil // no response at all
			}
			if len(rs) > 1 && bit(6) {
				rs[0], rs[len(rs)-1] = rs[len(rs)-1], rs[0]
			}
			if bit(7) && bit(5) {
				rs = append(rs, &genai.Part{Text: "note " + adaptertest.Words(v)})
			}
			out = append(out, m)
			if len(rs) > 0 {
				out = append(out, userC(rs...))
			}
		}
	}
	return out
}

// unsignedCurrentStep reports whether contents break Gemini 3's signature
// rule in their current turn (see Validate), the one thing a trim cannot
// repair without inventing a signature.
func unsignedCurrentStep(contents []*genai.Content) bool {
	for i := currentTurn(contents); i < len(contents); i++ {
		if contents[i].Role != genai.RoleModel {
			continue
		}
		for _, p := range contents[i].Parts {
			if p.FunctionCall != nil {
				if len(p.ThoughtSignature) == 0 {
					return true
				}
				break
			}
		}
	}
	return false
}

// checkNativeTrim trims in at budget with opts and checks the rules of
// this package: when the input's current turn signs its steps (whatever
// else is wrong with it), the output passes Validate, and it starts with a
// user content when anything was dropped or swept; always, every part of
// the output is the caller's, a notice, an elided copy of a function
// response, or a cleared copy of an unsigned function call (clearedCall:
// a signed call is never cleared, since genNative signs only first
// calls, and a step with a signed first call holds reasoning), and every
// signature is on the part it came on.
func checkNativeTrim(t *testing.T, in []*genai.Content, budget int, opts []history.Option) {
	t.Helper()
	owner := map[string]*genai.Part{}
	own := map[*genai.Part]string{}
	for _, c := range in {
		for _, p := range c.Parts {
			if len(p.ThoughtSignature) > 0 {
				owner[string(p.ThoughtSignature)] = p
			}
			own[p] = string(p.ThoughtSignature)
		}
	}
	before := adaptertest.JSON(t, in)
	out, res, err := Trim(nil, in, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	if adaptertest.JSON(t, in) != before {
		t.Fatal("Trim modified its input")
	}
	// An input with no contents, or none a person wrote, has none to send
	// either: Validate refuses both (ErrNoContents), and a caller learns it
	// from Validate, not Trim.
	if !unsignedCurrentStep(in) {
		if err := Validate(out); err != nil && !adapter.Unsendable(request{Contents: in}, request{Contents: out}) {
			t.Fatalf("budget %d: output fails Validate: %v\nin  %s\nout %s", budget, err, adaptertest.JSON(t, in), adaptertest.JSON(t, out))
		}
	}
	if (res.Trimmed || res.OrphansRemoved > 0) && len(out) > 0 && out[0].Role != genai.RoleUser {
		t.Fatalf("budget %d: the trimmed contents start with a %s content", budget, out[0].Role)
	}
	turn, step, _ := history.Breadcrumbs(opts...)
	for j, c := range out {
		for _, p := range c.Parts {
			if sig, ok := own[p]; ok {
				if string(p.ThoughtSignature) != sig {
					t.Fatalf("content %d: the caller's part now carries %q, not %q", j, p.ThoughtSignature, sig)
				}
				continue
			}
			if c.Role == genai.RoleUser && len(c.Parts) == 1 && (p.Text == turn.Content || p.Text == step.Content) {
				continue // a notice
			}
			if p.FunctionCall != nil {
				if msg := clearedCall(p, in); msg != "" {
					t.Fatalf("content %d: %s", j, msg)
				}
				rulesCleared.Add(1)
				continue
			}
			orig := owner[string(p.ThoughtSignature)]
			if p.FunctionResponse == nil || orig == nil || orig.FunctionResponse == nil ||
				orig.FunctionResponse.ID != p.FunctionResponse.ID || orig.FunctionResponse.Name != p.FunctionResponse.Name {
				t.Fatalf("content %d: part %s is not the caller's, nor an elided response with its part's signature", j, adaptertest.JSON(t, p))
			}
		}
	}
}

// rulesCleared counts the cleared calls checkNativeTrim saw.
var rulesCleared atomic.Int64

// nativeSeeds are fixed inputs of the rules sweep and fuzz target.
var nativeSeeds = [][]byte{
	{3, 0, 5, 1, 2, 7, 1, 3, 5, 8, 4, 6, 9, 0, 2, 5, 7, 3, 1, 0},
	{0, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9},
	{2, 5, 0, 0, 0, 1, 4, 3, 0, 5, 7, 0, 8, 1, 4, 4, 2, 0, 9, 9, 6, 3, 0, 1, 1, 4, 7},
	{1, 8, 3, 2, 1, 0, 12, 0, 5, 3, 3, 3, 8, 2, 2, 4, 0, 7, 7, 1, 1, 0, 6, 5, 11, 10},
}

// TestGeminiRules runs checkNativeTrim over genNative's histories for the
// fixed seeds and more derived from them, at budgets from 1 to above their
// size, with no option and with each option set of the ladder (the last
// clearing the arguments of old calls).
func TestGeminiRules(t *testing.T) {
	sets := append([][]history.Option{nil}, adapter.LadderOptions()...)
	signed, unsigned := 0, 0
	cleared := rulesCleared.Load()
	for _, seed := range adaptertest.Seeds(nativeSeeds, 20) {
		in := genNative(seed)
		if unsignedCurrentStep(in) {
			unsigned++
		} else {
			signed++
		}
		msgs, err := ToHistory(in)
		if err != nil {
			t.Fatal(err)
		}
		adaptertest.Sweep(t, seed, history.Estimate(msgs, nil), sets, func(t *testing.T, budget int, opts []history.Option) {
			checkNativeTrim(t, in, budget, opts)
		})
	}
	cleared = rulesCleared.Load() - cleared
	t.Logf("%d histories sign their current turn, %d do not; %d unsigned calls sent cleared", signed, unsigned, cleared)
	if signed == 0 || unsigned == 0 {
		t.Errorf("%d histories sign their current turn, %d do not: want some of each", signed, unsigned)
	}
	if cleared == 0 {
		t.Error("no call cleared")
	}
}

// FuzzGeminiRules: random histories (thoughts, signatures, parallel calls,
// pairing and order defects), any budget, any option set of the ladder
// (the last, 5, clears the arguments of old calls).
func FuzzGeminiRules(f *testing.F) {
	sets := append([][]history.Option{nil}, adapter.LadderOptions()...)
	for _, s := range nativeSeeds {
		f.Add(s, uint16(200), uint8(0))
		f.Add(s, uint16(200), uint8(len(sets)-1))
	}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		checkNativeTrim(t, genNative(data), int(budget)+1, sets[int(o)%len(sets)])
	})
}

// Trim's output sent through the real google.golang.org/genai client, on
// both of its backends, to an httptest server that checks each request as a
// Gemini 3 model does for the rules this package keeps (order, pairing
// counts, thought signatures) and answers one that breaks them with Gemini's
// own 400 body (see rules_test.go for the bodies and their sources). The
// server reads the request as JSON, not through this package or the SDK's
// types, so that it sees what went over the wire.

const rulesModel = "gemini-3-pro-preview"

// wirePart and wireContent are a request's contents as the server reads
// them: only the fields the rules look at, by their JSON names.
type wirePart struct {
	Text             *string          `json:"text"`
	ThoughtSignature string           `json:"thoughtSignature"`
	FunctionCall     *json.RawMessage `json:"functionCall"`
	FunctionResponse *json.RawMessage `json:"functionResponse"`
}

type wireContent struct {
	Role  string     `json:"role"`
	Parts []wirePart `json:"parts"`
}

// rulesServer answers generateContent as a Gemini 3 model does: Gemini's
// 400 for the first rule a request breaks, otherwise a short reply.
type rulesServer struct {
	t *testing.T
	b backend

	mu       sync.Mutex
	requests int
	rejected []string // the messages of the 400s it answered
	last     []wireContent
	// cleared counts the function calls received whose args are, byte for
	// byte, an object history.ElideOptions.ClearArguments leaves.
	cleared int
}

// check returns the body of Gemini's answer to contents, or "" when it
// accepts them. It applies, in content order:
//   - a function call turn must come right after a user content (bodyOrder);
//   - the content after it must hold as many function responses as it has
//     calls, and function responses only follow a function call turn
//     (bodyCount);
//   - when any model content carries a signature, the first function call
//     of each model content after the last user content that is not only
//     function responses must carry one (msgSignature, or
//     msgSignatureVertex on Vertex AI).
func (s *rulesServer) check(contents []wireContent) string {
	signed, current := false, 0
	for i, c := range contents {
		standard := len(c.Parts) == 0
		for _, p := range c.Parts {
			standard = standard || p.FunctionResponse == nil
			signed = signed || (c.Role == "model" && p.ThoughtSignature != "")
		}
		if c.Role != "model" && standard {
			current = i + 1
		}
	}
	count := func(c wireContent, response bool) int {
		n := 0
		for _, p := range c.Parts {
			if (response && p.FunctionResponse != nil) || (!response && p.FunctionCall != nil) {
				n++
			}
		}
		return n
	}
	for i, c := range contents {
		calls, responses := count(c, false), count(c, true)
		if responses > 0 && (i == 0 || count(contents[i-1], false) == 0) {
			return bodyCount
		}
		if calls == 0 {
			continue
		}
		if i == 0 || contents[i-1].Role == "model" {
			return bodyOrder
		}
		if i+1 == len(contents) || count(contents[i+1], true) != calls {
			return bodyCount
		}
		if !signed || i < current {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall == nil {
				continue
			}
			if p.ThoughtSignature == "" {
				var fc struct{ Name string }
				_ = json.Unmarshal(*p.FunctionCall, &fc)
				msg := fmt.Sprintf(msgSignature, fc.Name, i+1)
				if s.b.name == "VertexAI" {
					msg = fmt.Sprintf(msgSignatureVertex, fc.Name, i+1)
				}
				body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 400, "message": msg, "status": "INVALID_ARGUMENT"}})
				return string(body)
			}
			break
		}
	}
	return ""
}

func (s *rulesServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != s.b.path(rulesModel) || !s.b.auth(r) {
		s.t.Errorf("unexpected request %s %s", r.Method, r.URL)
	}
	var req struct {
		Contents []wireContent `json:"contents"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.t.Errorf("undecodable request: %v", err)
	}
	body := s.check(req.Contents)
	s.mu.Lock()
	s.requests++
	s.last = req.Contents
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			var fc struct{ Args json.RawMessage }
			if p.FunctionCall != nil && json.Unmarshal(*p.FunctionCall, &fc) == nil &&
				strings.HasPrefix(string(fc.Args), adaptertest.ClearedPrefix) && strings.HasSuffix(string(fc.Args), ` tokens]"}`) {
				s.cleared++
			}
		}
	}
	if body != "" {
		var e struct{ Error struct{ Message string } }
		_ = json.Unmarshal([]byte(body), &e)
		s.rejected = append(s.rejected, e.Error.Message)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if body != "" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(body))
		return
	}
	_, _ = w.Write([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":1,"totalTokenCount":11},"modelVersion":"` + rulesModel + `"}`))
}

// newRulesClient starts a rules server for b and returns it with a client
// of the real SDK pointed at it.
func newRulesClient(t *testing.T, b backend) (*rulesServer, *genai.Client) {
	t.Helper()
	s := &rulesServer{t: t, b: b}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	client, err := b.new(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return s, client
}

// wireSignatures returns the signatures of a request's parts, content by
// content, as the server received them.
func wireSignatures(contents []wireContent) [][]string {
	out := make([][]string, len(contents))
	for i, c := range contents {
		for _, p := range c.Parts {
			out[i] = append(out[i], p.ThoughtSignature)
		}
	}
	return out
}

// TestTrimAcceptedByGemini sends the trims of generated agent
// conversations (thinking steps that sign their first call, parallel calls,
// text beside responses, pairing defects for the sweep, with and without a
// system instruction) and of the histories Gemini rejects as they are
// (dropCases) at budgets from 1 to above their size, with no
// option and with each option set of the ladder, through the genai client
// to a server that enforces Gemini 3's rules: it rejects none, and it
// receives every signature on the part Trim returned it on. The ladder's
// last set clears the arguments of old calls: the server receives them as
// the object the core counted, byte for byte.
func TestTrimAcceptedByGemini(t *testing.T) {
	var ins []request
	for _, seed := range adaptertest.Seeds(adaptertest.LadderSeeds, 2) {
		for _, gen := range []func([]byte) request{adapter.Agent, adapter.More[0], adapter.More[1], adapter.More[2]} {
			ins = append(ins, gen(seed))
		}
	}
	for _, c := range dropCases { // the histories Gemini rejects as they are
		ins = append(ins, request{Contents: c.in})
	}
	sets := append([][]history.Option{nil}, adapter.LadderOptions()...)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s, client := newRulesClient(t, b)
			ctx := context.Background()
			sent := 0
			for k, in := range ins {
				// Under the race detector, 3 of the budgets (race.Sample):
				// every history still goes through the client with each
				// option set; the plain run sends every budget.
				for _, budget := range race.Sample(adaptertest.Budgets(adapter.Tokens(t, in), 6), 3) {
					for o, opts := range sets {
						out, _, err := Trim(in.System, in.Contents, budget, opts...)
						if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
							t.Fatal(err)
						}
						_, err = client.Models.GenerateContent(ctx, rulesModel, out, &genai.GenerateContentConfig{SystemInstruction: in.System})
						if err != nil {
							t.Fatalf("history %d budget %d options %d: %v\n%s", k, budget, o, err, adaptertest.JSON(t, out))
						}
						sent++
						got := wireSignatures(s.last)
						for i, c := range out {
							for p, part := range c.Parts {
								if got[i][p] != b64(part.ThoughtSignature) {
									t.Fatalf("content %d part %d arrived with signature %q, Trim returned %q", i, p, got[i][p], b64(part.ThoughtSignature))
								}
							}
						}
					}
				}
			}
			if s.requests != sent || len(s.rejected) != 0 {
				t.Fatalf("%d requests, %d rejected: %v", s.requests, len(s.rejected), s.rejected)
			}
			if s.cleared == 0 {
				t.Fatal("no request carried cleared arguments")
			}
			t.Logf("%s: %d trimmed requests, 0 rejected; %d function calls received with their arguments cleared", b.name, sent, s.cleared)
		})
	}
}

// TestGeminiRejectsBrokenHistories shows that the server's checks can
// fail, through the SDK: each history breaks one rule, the server answers
// with Gemini's 400 for it, and the SDK returns it as a genai.APIError.
// Each is then trimmed: the histories Trim repairs are accepted; a current
// turn without its signatures is not Trim's to repair (it adds no
// signature), and Validate reports it before it is sent.
func TestGeminiRejectsBrokenHistories(t *testing.T) {
	prompt := text("user", "go")
	cases := []struct {
		name    string
		in      []*genai.Content
		want    string // a phrase of Gemini's message
		repairs bool   // Trim's output is accepted
	}{
		{"call turn first", []*genai.Content{
			modelC(signed("a", "read", "s1")), userC(resp("a", "read", nil)), text("user", "next"),
		}, "function call turn comes immediately after a user turn", true},
		{"call turn after a model turn", []*genai.Content{
			prompt, text("model", "hm"), modelC(signed("a", "read", "s1")), userC(resp("a", "read", nil)),
		}, "function call turn comes immediately after a user turn", true},
		{"a response missing", []*genai.Content{
			prompt, modelC(signed("a", "read", "s1"), call("b", "grep", nil)), userC(resp("b", "grep", nil)),
		}, "number of function response parts is equal to the number of function call parts", true},
		{"signature lost", []*genai.Content{
			prompt, modelC(signed("a", "read", "s1")), userC(resp("a", "read", nil)),
			modelC(thought("next", "t2"), call("b", "grep", nil)), userC(resp("b", "grep", nil)),
		}, "missing a", false},
	}
	for _, b := range backends {
		for _, c := range cases {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				s, client := newRulesClient(t, b)
				ctx := context.Background()
				_, err := client.Models.GenerateContent(ctx, rulesModel, c.in, nil)
				var apiErr genai.APIError
				if !errors.As(err, &apiErr) || apiErr.Code != http.StatusBadRequest || apiErr.Status != "INVALID_ARGUMENT" || !strings.Contains(apiErr.Message, c.want) {
					t.Fatalf("err = %v, want Gemini's 400 saying %q", err, c.want)
				}
				if Validate(c.in) == nil {
					t.Error("Validate accepts what Gemini rejects")
				}
				out, _, err := Trim(nil, c.in, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				_, err = client.Models.GenerateContent(ctx, rulesModel, out, nil)
				if c.repairs != (err == nil) {
					t.Fatalf("trimmed: err = %v, want accepted %v", err, c.repairs)
				}
				if !c.repairs && !errors.Is(Validate(out), ErrMissingSignature) {
					t.Errorf("Validate(out) = %v, want ErrMissingSignature", Validate(out))
				}
				if s.requests != 2 {
					t.Errorf("%d requests", s.requests)
				}
			})
		}
	}
}

func b64(sig []byte) string {
	if len(sig) == 0 {
		return ""
	}
	b, _ := json.Marshal(sig) // as encoding/json writes []byte: standard base64
	return strings.Trim(string(b), `"`)
}
