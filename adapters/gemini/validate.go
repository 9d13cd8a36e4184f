package gemini

import (
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
// function calling (it answers a request that breaks them with HTTP 400,
// "Please ensure that function call turn comes immediately after a user turn
// or after a function response turn", "Please ensure that the number of
// function response parts is equal to the number of function call parts of
// the function call turn" or, from Gemini 3 on, "Function call is missing a
// thought_signature in functionCall parts"):
//
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
// Validate returns nil or the first violation, in content order: a
// *PairingError wrapping ErrUnpaired, a *SignatureError wrapping
// ErrMissingSignature, or an error wrapping ErrInvalidContent for a nil
// content or part or an unknown role. It never modifies contents.
func Validate(contents []*genai.Content) error {
	current := currentTurn(contents) // model contents from here on need signatures
	answered := -1                   // index of the last user content already checked as answers
	for i, c := range contents {
		if c == nil {
			return contentErr(i, -1, "nil content")
		}
		calls, responses := 0, 0
		for p, part := range c.Parts {
			if part == nil {
				return contentErr(i, p, "nil part")
			}
			if part.FunctionCall != nil {
				calls++
			}
			if part.FunctionResponse != nil {
				responses++
			}
		}
		switch c.Role {
		case genai.RoleModel:
			if responses > 0 {
				return unpaired(i, "", "function response in a model content")
			}
		case genai.RoleUser, "":
			if calls > 0 {
				return unpaired(i, "", "function call in a user content")
			}
			if responses > 0 && answered != i {
				return unpaired(i, "", "function responses that do not follow a function call turn")
			}
			continue
		default:
			return contentErr(i, -1, "unknown role "+strconv.Quote(c.Role))
		}
		if calls == 0 {
			continue
		}
		if i == 0 || !isUser(contents[i-1]) {
			return unpaired(i, "", "function call turn does not come immediately after a user turn or a function response turn")
		}
		if i >= current {
			for p, part := range c.Parts {
				if part.FunctionCall != nil {
					if len(part.ThoughtSignature) == 0 {
						return &SignatureError{Index: i, Part: p, Name: part.FunctionCall.Name}
					}
					break
				}
			}
		}
		if i+1 == len(contents) || contents[i+1] == nil || !isUser(contents[i+1]) {
			return unpaired(i, firstCallID(c), "function call turn is not followed by a function response turn")
		}
		next := contents[i+1]
		used := make([]bool, len(c.Parts))
		for p, part := range next.Parts {
			if part == nil {
				return contentErr(i+1, p, "nil part")
			}
			fr := part.FunctionResponse
			if fr == nil {
				continue
			}
			q := match(fr, c.Parts, used)
			if q < 0 {
				return unpaired(i+1, "", "function response "+strconv.Quote(fr.Name)+" answers no call of the preceding turn")
			}
			used[q] = true
		}
		for q, part := range c.Parts {
			if part.FunctionCall != nil && !used[q] {
				return unpaired(i, part.FunctionCall.ID, "function call "+strconv.Quote(part.FunctionCall.Name)+" has no response in the next turn")
			}
		}
		answered = i + 1
	}
	return nil
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
