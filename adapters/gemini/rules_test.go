package gemini

// Gemini's rules on the order of contents and on thought signatures: what
// Validate reports, what Trim repairs by dropping, and how thoughts and
// signatures count. Each rule comes with the error Gemini answers a request
// that breaks it (HTTP 400 INVALID_ARGUMENT), as reported publicly.

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"google.golang.org/genai"
)

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
