package gemini

import (
	"slices"
	"strconv"

	"github.com/histrim/history/internal/adapt"
	"google.golang.org/genai"
)

// PairingError reports the first place where contents break the pairing
// rule Validate checks: Index is the position in contents of the offending
// content, ID the id of the function call or response concerned ("" when
// it has none, Gemini's ids being optional, or for a turn out of place),
// Reason which part of the rule it breaks. It wraps ErrUnpaired.
type PairingError = adapt.PairingError

// SignatureError reports a function call that Gemini 3 rejects for want of
// a thought signature (see Validate). It wraps ErrMissingSignature.
type SignatureError struct {
	// Index is the position in contents of the model content, Part the
	// position of the function call part among its parts.
	Index, Part int
	// Name is the function's name.
	Name string
}

func (e *SignatureError) Error() string {
	return "history/gemini: content " + strconv.Itoa(e.Index) + " part " + strconv.Itoa(e.Part) +
		": function call " + strconv.Quote(e.Name) + " is the first of its step in the current turn and has no thought signature"
}

// Unwrap returns ErrMissingSignature.
func (e *SignatureError) Unwrap() error { return ErrMissingSignature }

// Validate checks contents against the rules the Gemini API enforces on
// the order of contents and on function calling (it answers a request
// that breaks them with HTTP 400, "* GenerateContentRequest.contents:
// contents is not specified",
// "Please ensure that function call turn comes immediately after a user turn
// or after a function response turn", "Please ensure that the number of
// function response parts is equal to the number of function call parts of
// the function call turn" or, from Gemini 3 on, "Function call is missing a
// thought_signature in functionCall parts"):
//
//   - There is at least one content.
//   - Every role is "user", "model" or "" (user). Function calls appear only
//     in model contents, function responses only in user contents.
//   - A model content with function calls comes immediately after a user
//     content (one with a prompt or with function responses), never first
//     and never after another model content.
//   - It is immediately followed by a user content whose function responses
//     answer its calls one for one: as many responses as calls, each
//     answering a distinct call, by id when the response has the id of one
//     of the calls, otherwise by name, in order, among calls without an id.
//   - A user content with function responses immediately follows such a
//     model content; responses answer nothing else.
//   - Thought signatures, when a model content carries any: in the current
//     turn, the first function call part of each model content (each step)
//     carries its signature. The current turn is what follows the last
//     user content that is not only function responses; parallel calls
//     carry one signature, on the first call. Gemini 3 models reject a
//     request that breaks this rule, whatever their thinking level, and
//     validate no earlier turn (https://ai.google.dev/gemini-api/docs/thought-signatures).
//     A request whose model contents carry no signature is read as one
//     for a model that does not think: the rule is then not checked.
//     Gemini 2.5 models return signatures but do not require them, and
//     may sign a thought part rather than the call: a caller that sends
//     such a history to Gemini 2.5 can ignore ErrMissingSignature. Any
//     non-empty signature passes, including the value Google documents
//     for calls no Gemini 3 model wrote ("skip_thought_signature_validator").
//
// A model content first is not reported: no current Gemini error for a
// model text there was found (Trim drops one anyway, see the package
// documentation), and a function call turn there breaks the order rule.
//
// Validate returns nil or the first violation, in content order:
// ErrNoContents, a *PairingError wrapping ErrUnpaired, a *SignatureError
// wrapping ErrMissingSignature, or an error wrapping ErrInvalidContent for
// a nil content or part or an unknown role. It never modifies contents.
func Validate(contents []*genai.Content) error {
	return adapt.Validate(providerRules, contents)
}

// providerRules is the provider's rules table that Validate walks
// (docs/providers.md). On one content, a row above reports first.
var providerRules = []adapt.Rule[*genai.Content]{{
	Rule:   "a request holds at least one content",
	Answer: "* GenerateContentRequest.contents: contents is not specified",
	Source: "vercel/ai#3775, NousResearch/hermes-agent#57942",
	Check:  checkNotEmpty,
}, {
	Rule:   "contents are user or model contents; function calls only in model contents, function responses only in user contents",
	Answer: "Please ensure that function call turn comes immediately after a user turn or after a function response turn.",
	Source: "continuedev/continue#11164, google.golang.org/genai Content",
	Check:  checkRoles,
}, {
	Rule:   "a function call turn comes right after a user turn (a prompt or function responses)",
	Answer: "Please ensure that function call turn comes immediately after a user turn or after a function response turn.",
	Source: "continuedev/continue#11164, google-gemini/gemini-cli#11814",
	Check:  checkOrder,
}, {
	Rule:   "Gemini 3: in the current turn, the first function call of each model step carries its thought signature",
	Answer: "Function call is missing a thought_signature in functionCall parts.",
	Source: "https://ai.google.dev/gemini-api/docs/thought-signatures, nearai/ironclaw#1510",
	Check:  checkSignatures,
}, {
	Rule:   "the content after a call turn answers its calls one for one; function responses answer nothing else",
	Answer: "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
	Source: "google-gemini/gemini-cli#18509",
	Check:  checkResponses,
}}

// checkNotEmpty reports a request without contents.
func checkNotEmpty(contents []*genai.Content) (int, error) {
	if len(contents) == 0 {
		return 0, ErrNoContents
	}
	return -1, nil
}

// shape counts the function calls and responses of c, and reports
// whether c and its parts are all set.
func shape(c *genai.Content) (calls, responses int, whole bool) {
	if c == nil {
		return 0, 0, false
	}
	for _, part := range c.Parts {
		if part == nil {
			return calls, responses, false
		}
		if part.FunctionCall != nil {
			calls++
		}
		if part.FunctionResponse != nil {
			responses++
		}
	}
	return calls, responses, true
}

// checkRoles is the Check of the roles rule, which also reports a nil
// content or part.
func checkRoles(contents []*genai.Content) (int, error) {
	for i, c := range contents {
		if c == nil {
			return i, contentErr(i, -1, "nil content")
		}
		if p := slices.Index(c.Parts, nil); p >= 0 {
			return i, contentErr(i, p, "nil part")
		}
		calls, responses, _ := shape(c)
		switch c.Role {
		case genai.RoleModel:
			if responses > 0 {
				return i, unpaired(i, "", "function response in a model content")
			}
		case genai.RoleUser, "":
			if calls > 0 {
				return i, unpaired(i, "", "function call in a user content")
			}
		default:
			return i, contentErr(i, -1, "unknown role "+strconv.Quote(c.Role))
		}
	}
	return -1, nil
}

// callTurn reports whether c is a whole model content with function
// calls.
func callTurn(c *genai.Content) bool {
	calls, _, whole := shape(c)
	return whole && calls > 0 && c.Role == genai.RoleModel
}

// checkOrder is the Check of the order rule.
func checkOrder(contents []*genai.Content) (int, error) {
	for i, c := range contents {
		if callTurn(c) && (i == 0 || !isUser(contents[i-1])) {
			return i, unpaired(i, "", "function call turn does not come immediately after a user turn or a function response turn")
		}
	}
	return -1, nil
}

// checkSignatures is the Check of the thought-signature rule.
func checkSignatures(contents []*genai.Content) (int, error) {
	for i := currentTurn(contents); i < len(contents); i++ {
		if !callTurn(contents[i]) {
			continue
		}
		for p, part := range contents[i].Parts {
			if part.FunctionCall != nil {
				if len(part.ThoughtSignature) == 0 {
					return i, &SignatureError{Index: i, Part: p, Name: part.FunctionCall.Name}
				}
				break
			}
		}
	}
	return -1, nil
}

// checkResponses is the Check of the rule that responses answer the call
// turn before them one for one.
func checkResponses(contents []*genai.Content) (int, error) {
	for i, c := range contents {
		_, responses, whole := shape(c)
		if whole && isUser(c) && responses > 0 && (i == 0 || !callTurn(contents[i-1])) {
			return i, unpaired(i, "", "function responses that do not follow a function call turn")
		}
		if !callTurn(c) {
			continue
		}
		if i+1 == len(contents) || !isUser(contents[i+1]) {
			return i, unpaired(i, firstCallID(c), "function call turn is not followed by a function response turn")
		}
		if at, err := answers(contents, i); err != nil {
			return at, err
		}
	}
	return -1, nil
}

// answers checks that contents[i+1] answers the calls of contents[i], a
// call turn, one for one.
func answers(contents []*genai.Content, i int) (int, error) {
	c := contents[i]
	used := make([]bool, len(c.Parts))
	for _, part := range contents[i+1].Parts {
		if part == nil || part.FunctionResponse == nil {
			continue
		}
		fr := part.FunctionResponse
		q := match(fr, c.Parts, used)
		if q < 0 {
			return i + 1, unpaired(i+1, "", "function response "+strconv.Quote(fr.Name)+" answers no call of the preceding turn")
		}
		used[q] = true
	}
	for q, part := range c.Parts {
		if part.FunctionCall != nil && !used[q] {
			return i, unpaired(i, part.FunctionCall.ID, "function call "+strconv.Quote(part.FunctionCall.Name)+" has no response in the next turn")
		}
	}
	return -1, nil
}

func isUser(c *genai.Content) bool {
	return c != nil && (c.Role == genai.RoleUser || c.Role == "")
}

// currentTurn returns the index from which Gemini 3 checks thought
// signatures (see Validate): just past the last user content that is not
// only function responses, or len(contents) when no model content carries
// a signature. Nil contents and parts are skipped (Validate reports them).
func currentTurn(contents []*genai.Content) int {
	signed := false
	start := 0
	for i, c := range contents {
		if c == nil {
			continue
		}
		standard := len(c.Parts) == 0
		for _, part := range c.Parts {
			standard = standard || (part != nil && part.FunctionResponse == nil)
		}
		if isUser(c) && standard {
			start = i + 1
		}
		if c.Role == genai.RoleModel {
			for _, part := range c.Parts {
				signed = signed || (part != nil && len(part.ThoughtSignature) > 0)
			}
		}
	}
	if !signed {
		return len(contents)
	}
	return start
}

func unpaired(i int, id, reason string) error {
	return adapt.Unpaired("gemini", "content", ErrUnpaired, i, id, reason)
}

// firstCallID returns the id of the first function call of c ("" when it
// has none).
func firstCallID(c *genai.Content) string {
	for _, part := range c.Parts {
		if part.FunctionCall != nil {
			return part.FunctionCall.ID
		}
	}
	return ""
}
