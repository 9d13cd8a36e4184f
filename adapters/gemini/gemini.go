package gemini

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/mediapart"
	"github.com/histrim/history/internal/notice"
	"github.com/histrim/history/internal/regroup"
	"github.com/histrim/history/internal/rules"
	"google.golang.org/genai"
)

// ErrInvalidContent is wrapped by the errors ToHistory and Trim return
// for contents they cannot convert: a nil content or part, a role other
// than "user", "model" or "", function calls in a user content or
// function responses in a model content, or arguments that do not
// encode as JSON.
var ErrInvalidContent = errors.New("history/gemini: invalid content")

// ErrUnpaired is wrapped by *PairingError, which Validate returns.
var ErrUnpaired = errors.New("history/gemini: function calls and responses are not paired")

// ErrNoContents is returned by Validate for a request without contents,
// which Gemini refuses with HTTP 400 INVALID_ARGUMENT ("*
// GenerateContentRequest.contents: contents is not specified"). Trim
// returns no contents when the sweep leaves none (contents holding only
// model contents, or only orphans): such a trim cannot be sent.
var ErrNoContents = errors.New("history/gemini: no contents: Gemini refuses a request without any")

// ErrMissingSignature is wrapped by *SignatureError, which Validate
// returns for a function call Gemini 3 rejects for want of a thought
// signature.
var ErrMissingSignature = errors.New("history/gemini: function call is missing a thought signature")

// ToHistory converts contents to the messages the core trimmer works on, one
// message per content except for user contents that hold function responses
// (one tool message per response, plus one nudge for the other parts). See
// the package documentation for the mapping and the pairing rule it encodes.
//
// Contents Gemini rejects where they stand, which a trim drops (see the
// package documentation, "Gemini's rules, kept by dropping"), convert to an
// assistant message holding only a call nobody answers, which the core's
// orphan sweep removes.
//
// The messages carry what the trimmer needs to count and pair, not the
// payload: inline data is reduced to its size (and an image's dimensions),
// so converting back is done with Trim, which returns the caller's
// originals. Notices a trim with default options inserts are marked
// history.KindBreadcrumb (see the package documentation); Trim also
// recognises the notices its options configure. ToHistory never modifies
// contents.
func ToHistory(contents []*genai.Content) ([]history.Message, error) {
	msgs, _, err := convert(0, contents, nil)
	return msgs, err
}

// Trim returns the longest suffix of whole turns of contents that fits
// budget tokens together with the system instruction and a breadcrumb, as
// history.TrimToRecentTurns decides it, mapped back onto the caller's own
// contents (see the package documentation): kept contents are the caller's
// pointers; a content the orphan sweep cut down, holding function
// responses that history.WithElision elided, or holding function calls
// whose arguments history.ElideOptions.ClearArguments cleared, is a new
// Content over the caller's remaining parts (an elided response is a copy
// answering {"output": placeholder}, a cleared call a copy whose Args are
// {"elided": "[arguments elided: N tokens]"}); and each notice (dropped
// turns, and dropped steps under history.WithStepTrim) is a new user
// Content. Contents Gemini rejects where they stand are dropped whole (see
// the package documentation, "Gemini's rules, kept by dropping"), so that
// the result passes Validate whenever the current turn of contents signs
// its steps;
// when anything was dropped or swept, it starts with a user content (but
// for a pinned model content, see the package documentation, "Pins"). The
// result converts back (ToHistory) to messages that cost no more than
// Result.Messages, so it fits the budget whenever the Result does.
//
// system is the request's system instruction (GenerateContentConfig
// .SystemInstruction), or nil. Its tokens count toward the budget and it is
// always kept, but it is not part of the returned contents: keep passing it
// in the config.
//
// The Result describes contents, not the system instruction: Result.Kept
// indexes the messages of ToHistory(contents) (-1 for the breadcrumb), and
// Result.Messages is in the same order as the returned contents (one
// message per content, except that a user content with function responses
// has one message per response and one for its other parts), and
// Result.Modified gives the positions in Messages of the kept messages the
// trim changed. Its token figures include the system instruction, as the
// budget does, and the overhead given with history.WithOverhead (see
// Overhead). opts are the core's options (history.WithCounter,
// history.WithOnTrim, history.WithCalibration, ...); history.WithPin takes
// indices into contents (see the package documentation, "Pins").
//
// Errors: a conversion error wraps ErrInvalidContent and comes with an empty
// Result; a pin on a content that cannot be pinned is a
// *history.OptionError naming the content; otherwise the error is the
// core's (history.ErrInvalidBudget, *history.OptionError,
// *history.MessageError, or a *history.BudgetError wrapping
// history.ErrLatestTurnTooLarge that comes with usable contents and
// Result).
// When nothing needs trimming or sweeping, Trim returns contents itself,
// clipped to its length.
func Trim(system *genai.Content, contents []*genai.Content, budget int, opts ...history.Option) ([]*genai.Content, history.Result, error) {
	return codec.Trim(system, contents, budget, opts)
}

// MessageError reports a content the adapter cannot convert: a nil
// content or part, a role other than "user", "model" or "", function
// calls in a user content or function responses in a model content, or
// arguments that do not encode as JSON. It wraps
// [history.ErrInvalidMessage] and ErrInvalidContent. Index is the
// position of the content (-1 for the system instruction), Reason says
// what is wrong with it (and in which part).
type MessageError = adapt.MessageError

// codec is the adapter's part of the shape every adapter shares
// (internal/adapt): the conversion both ways, the system instruction taken
// separately, and Gemini's rule that a thought signature binds only its
// own step (no step is kept for the reasoning that opened the tool loop).
var codec = &adapt.Codec[*genai.Content, *genai.Content]{
	Name: "gemini", Noun: "content",
	Convert: func(system *genai.Content, contents []*genai.Content, opts []history.Option) (*adapt.View[*genai.Content], error) {
		buf := regroup.TakeArrays()
		all, msgs, slots, err := convertRequest(system, contents, opts, buf)
		if err != nil {
			return nil, err
		}
		notice := func(b history.Message, _ *regroup.Group) *genai.Content { return breadcrumb(b, genai.RoleUser) }
		v := adapt.Grouped(contents, all, len(all)-len(msgs), slots, notice, cutDown)
		// Called by the wire's codec alone (adapt.RawSplice), once the
		// decision is written to bytes: the core and the output hold
		// copies of the messages, never their array.
		v.Release = func() { buf.Give(all, slots) }
		return v, nil
	},
	Rules: []history.Option{rules.LooseReasoning().(history.Option)},
}

// NewTrimmer returns a Trimmer for one conversation that trims with opts
// (history.WithLowWater, history.WithTrigger, history.WithElision, ...),
// fixed for its life.
func NewTrimmer(system *genai.Content, opts ...history.Option) *Trimmer {
	return &Trimmer{t: codec.NewTrimmer(system, opts)}
}

//go:generate go run github.com/histrim/history/internal/adapt/trimmergen -system *genai.Content -message *genai.Content

// Conversations trims many conversations, each with its own Trimmer, whose
// state it keeps in a history.StateStore shared by a runtime's replicas
// (history.Conversations over this package's messages): a conversation's
// requests send the prompts of one process wherever they land. Its
// methods are Fit and Observe (the door), Trim(ctx, key, system, transcript, budget),
// RecoverOverflow(ctx, key, system, transcript, providerErr, attempt),
// Reset, Forget, Close and RecallStore, the system prompt passed with
// every call; its fields OnState, MaxConversations and IdleAfter. See
// docs/replicas.md.
type Conversations struct {
	*adapt.SystemConversations[*genai.Content, *genai.Content]
}

// NewConversations returns Conversations that keep their state in store
// and trim with opts (those of NewTrimmer, the same on every replica).
func NewConversations(store history.StateStore, opts ...history.Option) *Conversations {
	return &Conversations{adapt.NewSystemConversations(codec, store, opts)}
}

// Positions returns where msgs[i], for each index i, landed in the output
// of the Trim or RecoverOverflow of msgs that returned res: the index to
// pin it at (history.WithPin) when that output is trimmed again; -1 for a
// message the output does not hold.
func Positions(msgs []*genai.Content, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
}

// convertRequest converts a request as Trim counts it: all is the system
// instruction, if any, as a system message, followed by msgs, the
// conversion of contents (see convert), whose slots say where each came
// from.
func convertRequest(system *genai.Content, contents []*genai.Content, opts []history.Option, buf *regroup.Arrays) (all, msgs []history.Message, slots []regroup.Slot, err error) {
	lead := 0
	if system != nil {
		lead = 1 // the system instruction's place, in the same array (copying msgs after it was a tenth of a request's allocation through the wire)
	}
	all, slots, err = convertIn(buf, lead, contents, opts)
	if err != nil || system == nil {
		return all, all, slots, err
	}
	if all[0], err = plain(system, history.RoleSystem, -1); err != nil {
		return nil, nil, nil, err
	}
	return all, all[lead:], slots, nil
}

// cutDown returns a new content with the parts of c that g keeps, in their
// original order, the function responses g elided replaced by their
// placeholder and the function calls whose arguments g clears by copies
// carrying the new arguments; false if none is left.
func cutDown(c *genai.Content, g *regroup.Group) (*genai.Content, bool) {
	parts := regroup.KeptParts(g, regroup.WithArgs(g, c.Parts, withArgs), func(p *genai.Part, text string) *genai.Part {
		return wireReads.elided(c, p, text)
	})
	return &genai.Content{Role: c.Role, Parts: parts}, len(parts) > 0
}

// withArgs returns a copy of the function call part p whose call's Args
// are args, the JSON object history.ElideOptions.ClearArguments cleared
// the arguments to ({"elided": "[arguments elided: N tokens]"}), decoded:
// encoded again, as ToHistory and the client do, they give back args
// exactly. The call keeps its ID and Name, the part every other field
// (its ThoughtSignature included); the call's PartialArgs, which would
// carry the arguments again, are dropped. p is not modified.
func withArgs(p *genai.Part, args string) *genai.Part {
	np := *p
	fc := *p.FunctionCall
	fc.Args = nil
	// The core clears to a JSON object of one string, which decodes and
	// encodes back unchanged.
	_ = json.Unmarshal([]byte(args), &fc.Args)
	fc.PartialArgs = nil
	np.FunctionCall = &fc
	return &np
}

// elide returns a copy of the function response part p whose response is
// {"output": text} and which holds no parts of its own: its ID, Name and
// every other field are kept. p is not modified.
func elide(p *genai.Part, text string) *genai.Part {
	np := *p
	fr := *p.FunctionResponse
	fr.Response = map[string]any{"output": text}
	fr.Parts = nil
	np.FunctionResponse = &fr
	return &np
}

// breadcrumb renders a notice the trimmer inserted as a content of the
// given role with one text part. Trim renders every notice as a user
// content, whatever its role: the turn notice stands first, where
// contents begin with a user turn, and the step notice right before a
// kept step, whose function call turn must follow a user turn. Earlier
// versions rendered an assistant notice as a model content where no model
// content followed it; ToHistory and Trim still recognise those.
func breadcrumb(m history.Message, role string) *genai.Content {
	return &genai.Content{Role: role, Parts: []*genai.Part{{Text: m.Content}}}
}

// convert maps contents to messages and their slots, recognising the
// notices a trim with opts inserts (see notice.Mark): a content holding one
// text part with exactly a notice's text, in a role Trim gives it. The
// messages of contents are msgs[lead:], whose slots are slots: lead zero
// messages stand in front of them, for the caller to fill.
func convert(lead int, contents []*genai.Content, opts []history.Option) (msgs []history.Message, slots []regroup.Slot, err error) {
	return convertIn(nil, lead, contents, opts)
}

// convertIn is convert building its messages and slots in buf's arrays
// when they are large enough (nil: fresh ones).
func convertIn(buf *regroup.Arrays, lead int, contents []*genai.Content, opts []history.Option) (msgs []history.Message, slots []regroup.Slot, err error) {
	msgs, slots, err = convertContentsIn(buf, lead, contents)
	if err != nil {
		return nil, nil, err
	}
	notice.Mark(msgs[lead:], opts, readNotice, func(i int) bool { return len(contents[slots[i].Native].Parts) == 1 })
	return msgs, slots, nil
}

// readNotice returns the notice b as ToHistory reads it once Trim has
// rendered it, in both roles (see breadcrumb).
func readNotice(b history.Message) []history.Message {
	var out []history.Message
	for _, role := range []string{genai.RoleUser, genai.RoleModel} {
		m, _, _ := convertContents(0, []*genai.Content{breadcrumb(b, role)}) // a rendered notice always converts
		out = append(out, m[0])
	}
	return out
}

// convertContents is convert without the recognition of notices. It reads
// contents by Gemini's rules first (see planContents): which call each
// function response answers, and which contents only dropping repairs.
// lead is as for convert.
func convertContents(lead int, contents []*genai.Content) ([]history.Message, []regroup.Slot, error) {
	return convertContentsIn(nil, lead, contents)
}

// convertContentsIn is convertContents building its messages and slots in
// buf's arrays when they are large enough (nil: fresh ones).
func convertContentsIn(buf *regroup.Arrays, lead int, contents []*genai.Content) ([]history.Message, []regroup.Slot, error) {
	pl, err := planContents(contents)
	defer pl.release()
	if err != nil {
		return nil, nil, err
	}
	msgs, slots := buf.Make(lead+len(contents), len(contents))
	msgs = msgs[:lead] // zero messages: the arrays come empty
	for i, c := range contents {
		switch {
		case pl.drop[i]:
			msgs = append(msgs, history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: dropID(i)}}})
			slots = append(slots, regroup.Slot{Native: i})
			continue
		case c.Role == genai.RoleModel:
			s := regroup.Slot{Native: i} // every part
			for p, part := range c.Parts {
				if part.FunctionCall != nil {
					s.Calls = append(s.Calls, p)
				}
			}
			msgs = append(msgs, pl.model[i])
			slots = append(slots, s)
			continue
		case pl.answers[i] == nil: // a user content without function responses
			m, err := plain(c, history.RoleUser, i)
			if err != nil {
				return nil, nil, err
			}
			msgs = append(msgs, m)
			slots = append(slots, regroup.Slot{Native: i}) // every part
			continue
		}
		// Function responses: one tool message each, the other parts as a
		// nudge placed where its first part stands; as a user message of
		// its own when no response answers a call, since nothing else of
		// the content is then sent.
		kind := history.Kind("")
		if slices.ContainsFunc(pl.answers[i], func(q int) bool { return q >= 0 }) {
			kind = history.KindNudge
		}
		nudge := -1 // the nudge's slot; its message is msgs[lead+nudge]
		for p, part := range c.Parts {
			if part.FunctionResponse == nil {
				if nudge < 0 {
					nudge = len(slots)
					msgs = append(msgs, history.Message{Role: history.RoleUser, Kind: kind})
					slots = append(slots, regroup.Slot{Native: i, Parts: []int{}})
				}
				if err := addPart(&msgs[lead+nudge], part, i, p, history.PartReasoning); err != nil {
					return nil, nil, err
				}
				slots[nudge].Parts = append(slots[nudge].Parts, p)
				continue
			}
			var id string
			if q := pl.answers[i][p]; q >= 0 {
				id = callID(i-1, q, contents[i-1].Parts[q].FunctionCall)
			} else {
				id = "#orphan" + strconv.Itoa(i) + "." + strconv.Itoa(p) // an id no call has
			}
			m, err := response(part.FunctionResponse, id, i, p)
			if err != nil {
				return nil, nil, err
			}
			msgs = append(msgs, m)
			slots = append(slots, regroup.Slot{Native: i, Parts: []int{p}})
		}
	}
	return msgs, slots, nil
}

// contentPlan is what planContents reads from contents.
type contentPlan struct {
	// answers holds, for each user content with function responses, the
	// index of the call part of the previous content each of its parts
	// answers: -1 for a response that answers nothing (and for the other
	// parts). nil for every other content.
	answers [][]int
	// drop marks the model contents only dropping repairs (see
	// planContents).
	drop []bool
	// model holds the message of each model content.
	model []history.Message
	// answered holds, for each model content, which of its parts are
	// answered calls (planContents' own).
	answered [][]bool
}

// plans holds the arrays of plans that are done (release), emptied, for
// the next planContents: a plan has four arrays as long as the contents,
// a message per content among them (at 100k tokens, an eighth of what a
// request through the wire allocated).
var plans sync.Pool // of *contentPlan

// maxPooledPlan is the most contents of a plan whose arrays plans keeps.
const maxPooledPlan = 1 << 16

// release gives pl's arrays to a later planContents, emptied, so that
// they keep no content's memory alive. pl is not read afterwards: what
// convertContents built from it holds copies of its messages.
func (pl *contentPlan) release() {
	if cap(pl.model) == 0 || cap(pl.model) > maxPooledPlan {
		return
	}
	clear(pl.answers)
	clear(pl.drop)
	clear(pl.model)
	clear(pl.answered)
	kept := *pl
	*pl = contentPlan{}
	plans.Put(&kept)
}

// planContents checks contents for what ToHistory refuses (nil contents
// and parts, unknown roles, calls from the user and responses from the
// model), then reads them by Gemini's rules:
//
//   - A function response answers a call of the immediately preceding
//     content, if that is a model content (see match); any other
//     response answers nothing.
//   - A model content that thinks (holds a thought or a thought signature)
//     and whose first function call, or one of whose signed calls, is
//     unanswered is dropped whole (see sendable).
//   - Contents begin with a user turn: a model content with no user
//     content before it is dropped whole, and its responses answer
//     nothing. Gemini rejects a function call turn there
//     (google-gemini/gemini-cli#11814), and a model text there has been
//     reported rejected too (NousResearch/hermes-agent#55427).
//   - A function call turn (a model content with an answered call) must
//     come right after a user content. Model contents between it and the
//     user content before it (left with no answered call) are dropped
//     whole.
//
// "Before" counts the contents that outlive the orphan sweep: a model
// content with an answered call or anything else to send, any user content
// with a part other than a function response or with a response that
// answers a call. A dropped content converts to an assistant message
// holding only a call nobody answers (dropID), which the orphan sweep
// removes; the responses that answered its calls answer nothing and go
// with it.
func planContents(contents []*genai.Content) (contentPlan, error) {
	n := len(contents)
	var pl contentPlan
	if p, _ := plans.Get().(*contentPlan); p != nil && cap(p.model) >= n {
		pl = contentPlan{answers: p.answers[:n], drop: p.drop[:n], model: p.model[:n], answered: p.answered[:n]} // emptied by release
	} else {
		pl = contentPlan{answers: make([][]int, n), drop: make([]bool, n), model: make([]history.Message, n), answered: make([][]bool, n)}
	}
	answered := pl.answered // for each model content, which of its parts are answered calls
	for i, c := range contents {
		if err := pl.read(contents, i, answered); err != nil {
			return pl, err
		}
		if c.Role == genai.RoleModel && answered[i] == nil {
			answered[i] = make([]bool, len(c.Parts))
		}
	}
	for i, c := range contents {
		if c.Role == genai.RoleModel && !sendable(c, answered[i]) {
			pl.unanswer(i)
		}
	}
	pl.order(contents, answered)
	return pl, nil
}

// read checks content i for what ToHistory refuses and reads it: a model
// content's message, or which call of the content before each function
// response of a user content answers (answered, for each model content,
// says which of its parts are answered calls).
func (pl *contentPlan) read(contents []*genai.Content, i int, answered [][]bool) error {
	c := contents[i]
	if c == nil {
		return contentErr(i, -1, "nil content")
	}
	for p, part := range c.Parts {
		if part == nil {
			return contentErr(i, p, "nil part")
		}
	}
	switch c.Role {
	case genai.RoleModel:
		m, err := plain(c, history.RoleAssistant, i)
		pl.model[i] = m
		return err
	case genai.RoleUser, "":
	default:
		return contentErr(i, -1, "unknown role "+strconv.Quote(c.Role))
	}
	responses := 0
	for _, part := range c.Parts {
		if part.FunctionCall != nil {
			return contentErr(i, -1, "function call in a user content")
		}
		if part.FunctionResponse != nil {
			responses++
		}
	}
	if responses == 0 {
		return nil
	}
	var prev []*genai.Part // the previous content's parts if it is a model content
	if i > 0 && contents[i-1].Role == genai.RoleModel {
		prev = contents[i-1].Parts
	}
	pl.answers[i] = make([]int, len(c.Parts))
	used := make([]bool, len(prev))
	for p, part := range c.Parts {
		pl.answers[i][p] = -1
		if fr := part.FunctionResponse; fr != nil {
			if q := match(fr, prev, used); q >= 0 {
				used[q] = true
				pl.answers[i][p] = q
			}
		}
	}
	if prev != nil {
		answered[i-1] = used
	}
	return nil
}

// unanswer drops model content i whole: the responses of the next content
// that answer its calls answer nothing.
func (pl *contentPlan) unanswer(i int) {
	pl.drop[i] = true
	if i+1 < len(pl.answers) && pl.answers[i+1] != nil {
		for p := range pl.answers[i+1] {
			pl.answers[i+1][p] = -1
		}
	}
}

// order drops the model contents that stand where Gemini's order rules
// reject them (see planContents): before the first user content, and
// between a function call turn and the user content before it.
func (pl *contentPlan) order(contents []*genai.Content, answered [][]bool) {
	var live []int // the contents before i that outlive the sweep
	for i, c := range contents {
		switch {
		case pl.drop[i]:
			continue
		case c.Role == genai.RoleModel:
			if len(live) == 0 { // contents begin with a user turn
				pl.unanswer(i)
				continue
			}
			if !slices.Contains(answered[i], true) {
				if m := &pl.model[i]; m.Content != "" || len(m.Parts) > 0 {
					live = append(live, i)
				}
				continue
			}
			// live[0] is a user content: only model contents are popped.
			for contents[live[len(live)-1]].Role == genai.RoleModel {
				pl.drop[live[len(live)-1]] = true // it has no answered call: nothing answers it
				live = live[:len(live)-1]
			}
			live = append(live, i)
		case pl.answers[i] == nil:
			live = append(live, i)
		default:
			for p, part := range c.Parts {
				if part.FunctionResponse == nil || pl.answers[i][p] >= 0 {
					live = append(live, i)
					break
				}
			}
		}
	}
}

// sendable reports whether the model content c can be sent with its
// unanswered calls stripped (answered says which of its parts are answered
// calls). A call cannot be sent without its response, and a thought
// signature belongs to its part: a signed call without a response goes,
// and its signature with it. Gemini 3 binds a step's signature to its
// first call, so a step that thinks and lost its first call would send
// its next call first, without the signature (and the step's thoughts
// would read as the step's no more). Such contents are dropped whole;
// any other is cut down to its answered calls by the orphan sweep.
func sendable(c *genai.Content, answered []bool) bool {
	thinks, first := false, -1
	for p, part := range c.Parts {
		if (part.Thought && part.Text != "") || len(part.ThoughtSignature) > 0 {
			thinks = true
		}
		if part.FunctionCall == nil {
			continue
		}
		if first < 0 {
			first = p
		}
		if len(part.ThoughtSignature) > 0 && !answered[p] {
			return false
		}
	}
	return !thinks || first < 0 || answered[first]
}

// dropID is the id of the call a dropped content converts to (see
// planContents).
func dropID(i int) string { return "#drop" + strconv.Itoa(i) }

// plain converts a content that holds no function responses. Thoughts and
// thought signatures are reasoning parts, except in a model content whose
// first function call has no signature (see reasoningType).
func plain(c *genai.Content, role history.Role, i int) (history.Message, error) {
	if m, ok := wireReads.get(c, role, i); ok {
		return m, nil
	}
	m, err := plainOnce(c, role, i)
	if err == nil {
		wireReads.put(c, role, i, m)
	}
	return m, err
}

// plainOnce is plain without wireReads.
func plainOnce(c *genai.Content, role history.Role, i int) (history.Message, error) {
	m := history.Message{Role: role}
	reasoning := reasoningType(c)
	for p, part := range c.Parts {
		if part == nil {
			return m, contentErr(i, p, "nil part")
		}
		if part.FunctionResponse != nil {
			return m, contentErr(i, p, "function response in a "+string(role)+" content")
		}
		if err := addPart(&m, part, i, p, reasoning); err != nil {
			return m, err
		}
	}
	return m, nil
}

// reasoningType returns the part type the thoughts and thought signatures
// of c count as: history.PartReasoning, except in a content whose first
// function call carries no signature, where they count (as much) as
// history.PartText. Gemini 3 rejects such a step in the current turn; the
// core keeps a reasoning step at the front of the latest tool loop, which
// can bring it into the current turn when a later user content is dropped
// with its step, so such a step must not read as one.
func reasoningType(c *genai.Content) history.PartType {
	for _, part := range c.Parts {
		if part != nil && part.FunctionCall != nil {
			if len(part.ThoughtSignature) == 0 {
				return history.PartText
			}
			break
		}
	}
	return history.PartReasoning
}

// addPart adds what part costs to m: text to its content, everything else
// as parts and tool calls. A thought, and the thought signature of a part
// other than a function response, count as parts of type reasoning
// (history.PartReasoning, or history.PartText, see reasoningType); the
// signature counts as the base64 text the request carries.
func addPart(m *history.Message, part *genai.Part, i, p int, reasoning history.PartType) error {
	if part.Text != "" {
		if part.Thought {
			m.Parts = append(m.Parts, history.Part{Type: reasoning, Text: part.Text})
		} else {
			if m.Content != "" {
				m.Content += "\n"
			}
			m.Content += part.Text
		}
	}
	if fc := part.FunctionCall; fc != nil {
		if m.Role != history.RoleAssistant {
			return contentErr(i, p, "function call in a "+string(m.Role)+" content")
		}
		args, err := jsonText(fc.Args, i, p)
		if err != nil {
			return err
		}
		id := fc.ID
		if id == "" {
			id = syntheticID(i, p)
		}
		m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: id, Name: fc.Name, Arguments: args})
	}
	if d := part.InlineData; d != nil {
		m.Parts = append(m.Parts, mediapart.Blob(d.MIMEType, d.Data))
	}
	if f := part.FileData; f != nil {
		m.Parts = append(m.Parts, mediapart.Blob(f.MIMEType, nil))
	}
	if x := part.ExecutableCode; x != nil {
		m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: x.Code})
	}
	if x := part.CodeExecutionResult; x != nil {
		m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: x.Output})
	}
	if x := part.ToolCall; x != nil {
		if err := addJSON(m, x, i, p); err != nil {
			return err
		}
	}
	if x := part.ToolResponse; x != nil {
		if err := addJSON(m, x, i, p); err != nil {
			return err
		}
	}
	if len(part.ThoughtSignature) > 0 {
		m.Parts = append(m.Parts, history.Part{Type: reasoning, Text: base64.StdEncoding.EncodeToString(part.ThoughtSignature)})
	}
	return nil
}

// addJSON adds v, a server-side tool call or response, as a text part.
func addJSON(m *history.Message, v any, i, p int) error {
	text, err := jsonText(v, i, p)
	if err != nil {
		return err
	}
	m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: text})
	return nil
}

// response converts one function response to a tool message answering id.
func response(fr *genai.FunctionResponse, id string, i, p int) (history.Message, error) {
	text, ok := fr.Response["output"].(string)
	if !ok || len(fr.Response) != 1 {
		var err error
		if text, err = jsonText(fr.Response, i, p); err != nil {
			return history.Message{}, err
		}
	}
	m := history.Message{Role: history.RoleTool, ToolCallID: id, Name: fr.Name, Content: text}
	for _, rp := range fr.Parts {
		switch {
		case rp == nil:
		case rp.InlineData != nil:
			m.Parts = append(m.Parts, mediapart.Blob(rp.InlineData.MIMEType, rp.InlineData.Data))
		case rp.FileData != nil:
			m.Parts = append(m.Parts, mediapart.Blob(rp.FileData.MIMEType, nil))
		}
	}
	return m, nil
}

// match returns the index in calls of the unused function call fr answers,
// or -1: the call with fr's id, else the first unused call with fr's name
// and no id.
func match(fr *genai.FunctionResponse, calls []*genai.Part, used []bool) int {
	if fr.ID != "" {
		for q, part := range calls {
			if fc := part.FunctionCall; fc != nil && !used[q] && fc.ID == fr.ID {
				return q
			}
		}
	}
	for q, part := range calls {
		if fc := part.FunctionCall; fc != nil && !used[q] && fc.ID == "" && fc.Name == fr.Name {
			return q
		}
	}
	return -1
}

func callID(i, p int, fc *genai.FunctionCall) string {
	if fc.ID != "" {
		return fc.ID
	}
	return syntheticID(i, p)
}

func syntheticID(i, p int) string { return "#c" + strconv.Itoa(i) + "." + strconv.Itoa(p) }

// jsonText encodes v (function arguments or a response) as the JSON text
// the model reads. A nil map encodes as "".
func jsonText(v any, i, p int) (string, error) {
	if m, ok := v.(map[string]any); ok && m == nil {
		return "", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", contentErr(i, p, err.Error())
	}
	return string(b), nil
}

// contentErr is the *MessageError for part p of content i (p < 0: the
// content; i < 0: the system instruction).
func contentErr(i, p int, reason string) error {
	if i < 0 {
		reason = "system instruction: " + reason
	}
	if p >= 0 {
		reason = "part " + strconv.Itoa(p) + ": " + reason
	}
	return adapt.Invalid("gemini", "content", ErrInvalidContent, i, reason)
}
