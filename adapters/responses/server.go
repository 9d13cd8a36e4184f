package responses

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/origins"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// ErrChained is wrapped by *ChainedError: the request continues a
// response (previous_response_id) or a conversation, whose items the
// server holds.
var ErrChained = errors.New("history/responses: the request continues a stored response or conversation")

// ChainedError reports a request that chains onto state the server holds
// (params.PreviousResponseID or params.Conversation): its input is only
// the new items, and the history the server holds cannot be pruned from
// the client. Trim a stateless transcript instead (store it yourself and
// send it whole), or let the server manage it (context_management
// compaction, truncation "auto"). It wraps ErrChained.
type ChainedError struct {
	// PreviousResponseID is the response the request continues; empty
	// when it continues a conversation.
	PreviousResponseID string
}

func (e *ChainedError) Error() string {
	if e.PreviousResponseID == "" {
		return "history/responses: the request continues a conversation: the server holds its items, which the client cannot prune"
	}
	return "history/responses: the request continues response " + strconv.Quote(e.PreviousResponseID) +
		": the server holds its items, which the client cannot prune"
}

// Unwrap returns ErrChained.
func (e *ChainedError) Unwrap() error { return ErrChained }

// TrimRequest trims the input items of params (params.Input.OfInputItemList)
// as [Trim] does and returns params with the trimmed items; with
// params.Reasoning.Context "all_turns" it counts the reasoning items of
// earlier turns too, which the API then reads (see "Counting reasoning" in
// the package documentation). It refuses a request that chains onto
// server-held state (previous_response_id or a conversation) with a
// *ChainedError: only a stateless request can be trimmed from the client.
// params is not modified.
func TrimRequest(params responses.ResponseNewParams, budget int, opts ...history.Option) (responses.ResponseNewParams, history.Result, error) {
	rc, err := readContext(&params)
	if err != nil {
		return params, history.Result{Budget: budget}, err
	}
	out, res, err := codec.Trim(rc, params.Input.OfInputItemList, budget, opts)
	if out != nil {
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: out}
	}
	return params, res, err
}

// readContext returns which reasoning items params has the API read back,
// or a *ChainedError for a request that chains onto server-held state.
func readContext(params *responses.ResponseNewParams) (reasoningContext, error) {
	if params.PreviousResponseID.Valid() {
		return currentTurn, &ChainedError{PreviousResponseID: params.PreviousResponseID.Value}
	}
	if raw, err := json.Marshal(params.Conversation); err == nil && string(raw) != "null" && string(raw) != `""` && string(raw) != "{}" {
		return currentTurn, &ChainedError{}
	}
	rc := currentTurn
	if params.Reasoning.Context == shared.ReasoningContextAllTurns {
		rc.allTurns = true
	}
	return rc, nil
}

// opaquePayload returns an item's encrypted_content (a compaction or
// reasoning item's opaque payload), and whether it has the field; typ is
// the item's type when it has the field or is a compaction item (it may
// be "" for another item). A typed item (not built with param.Override)
// is read from its fields, any other through its JSON: Compacted,
// Record and Retarget read every item of a transcript on every request.
func opaquePayload(u *Item) (typ, payload string, has bool) {
	if v := variant(u); v != nil && !overridden(u) && !overridden(v) {
		switch {
		case u.OfCompaction != nil:
			return "compaction", u.OfCompaction.EncryptedContent, true
		case u.OfReasoning != nil:
			enc := u.OfReasoning.EncryptedContent
			return "reasoning", enc.Value, enc.Valid()
		}
		return "", "", false
	}
	return opaqueJSON(u)
}

// opaqueJSON is opaquePayload read through the item's JSON.
func opaqueJSON(u *Item) (typ, payload string, has bool) {
	raw, err := json.Marshal(u)
	if err != nil {
		return "", "", false
	}
	var w struct {
		Type      string  `json:"type"`
		Encrypted *string `json:"encrypted_content"`
	}
	if json.Unmarshal(raw, &w) != nil || w.Encrypted == nil {
		return w.Type, "", false
	}
	return w.Type, *w.Encrypted, true
}

// Compacted returns the items a stateless request with server-side
// compaction (context_management) sends: the leading system and
// developer messages, then everything from the latest compaction item on.
// The server reads nothing before that item, so the items before it may
// go, and go first: they cost the server nothing, and counting them would
// make the library trim below the server's trigger. A compaction item
// whose encrypted_content is empty (a gateway's or a store's loss; the
// API rejects it) is left out, and does not count as the latest. Without
// a compaction item, Compacted returns items itself.
//
// Do not use it on the output of the compact endpoint
// (POST /responses/compact), which is the whole new window: the user
// messages it keeps before its compaction item are read.
func Compacted(items []Item) []Item {
	latest, empty := -1, false
	for i := range items {
		if typ, payload, _ := opaquePayload(&items[i]); typ == "compaction" {
			if payload == "" {
				empty = true
				continue
			}
			latest = i
		}
	}
	if latest < 0 && !empty {
		return items
	}
	out := make([]Item, 0, len(items))
	for i := range items {
		typ, payload, _ := opaquePayload(&items[i])
		if typ == "compaction" && payload == "" {
			continue
		}
		if i < latest {
			if v, err := read(&items[i]); err != nil || v.cls != clsSystem || v.typ == "additional_tools" {
				continue
			}
		}
		out = append(out, items[i])
	}
	return out
}

// ErrGuard is wrapped by *GuardError: the budget given to Guard does not
// leave the server's compaction room to run.
var ErrGuard = errors.New("history/responses: budget at or below the server's compact_threshold")

// GuardError reports a budget at or below the server's compact_threshold:
// the library would rewrite the prompt before the server compacts it, and
// the cache would be rewritten by both. It wraps ErrGuard.
type GuardError struct {
	Budget, Threshold int
}

func (e *GuardError) Error() string {
	return "history/responses: budget " + strconv.Itoa(e.Budget) + " is at or below the server's compact_threshold " +
		strconv.Itoa(e.Threshold) + ": the library would rewrite the prompt before the server does"
}

// Unwrap returns ErrGuard.
func (e *GuardError) Unwrap() error { return ErrGuard }

// Guard returns the options that make the library the hard guard above
// the server's compaction when params turn it on (context_management with
// a compact_threshold), so that each rewrite of the prompt has one owner:
// the server compacts from its threshold on, and the library only keeps
// the request inside budget (the model's window), whatever the server
// does, and recovers from an overflow. Over budget, it drops whole turns
// first; when the latest turn alone does not fit (a burst of tool results
// arrived after the server's last compaction), it drops the oldest steps
// of that turn (history.WithStepTrim) and, as the last rung, cuts the
// largest tool results still sent to a head and tail digest
// (history.ElideOptions.Cut; no result is elided otherwise), so that the
// request fits unless the user's own text does not. Below budget it
// changes nothing. Trim Compacted(transcript) (or give it to a Trimmer)
// with the options Guard returns, at that budget, and add no
// history.WithElision, history.WithSummarizer, history.WithLowWater or
// history.WithTrigger: each would rewrite the prompt below the server's
// threshold. The returned options are the guard's rungs, then opts (a
// later option overrides what the rungs set), then
// history.WithOverhead(Overhead(params, nil)). Guard returns a
// *GuardError when budget is not above the threshold.
func Guard(params responses.ResponseNewParams, budget int, opts ...history.Option) ([]history.Option, error) {
	for _, cm := range params.ContextManagement {
		if t := int(cm.CompactThreshold.Value); cm.Type == "compaction" && cm.CompactThreshold.Valid() && budget <= t {
			return nil, &GuardError{Budget: budget, Threshold: t}
		}
	}
	out := make([]history.Option, 0, len(opts)+3)
	// Step trimming, and the cut rung of elision with no result eligible
	// for elision itself (none is large enough): only a request over
	// budget once every turn and step that may go is gone has results cut.
	out = append(out, history.WithStepTrim(), history.WithElision(history.ElideOptions{MinTokens: math.MaxInt, Cut: true}))
	out = append(out, opts...)
	return append(out, history.WithOverhead(Overhead(params, nil))), nil
}

// InputTokens returns usage.input_tokens of resp, the size of the input
// the API counted (cached tokens included). ok is false when the server
// compacted in this response (a compaction item in its output): the count
// then describes a prompt the library did not measure, and a
// history.Calibration must not learn from it.
func InputTokens(resp *responses.Response) (n int, ok bool) {
	for _, o := range resp.Output {
		if o.Type == "compaction" {
			return 0, false
		}
	}
	return int(resp.Usage.InputTokens), true
}

// Observe teaches cal the API's count of the request whose trim returned
// res, from its response (see InputTokens); it reports false, learning
// nothing, for a response in which the server compacted.
func Observe(cal *history.Calibration, res history.Result, resp *responses.Response) bool {
	n, ok := InputTokens(resp)
	if ok {
		cal.Observe(res.TokensAfter, n)
	}
	return ok
}

// Origin names the backend that wrote an opaque item: provider and model.
type Origin = origins.Origin

// Origins records which backend wrote each opaque item of a conversation
// (reasoning and compaction items' encrypted_content): only that backend
// can decode them ("Could not decode the compaction blob"). Record each
// response's output as it is appended to the transcript; before sending
// to a backend, Retarget the items to it. The zero value is ready to use;
// it is safe for concurrent use and keeps a digest per item.
type Origins = origins.Origins

// Record notes that origin wrote the opaque items of items (a response's
// output, as the caller appends it to its transcript).
func Record(o *Origins, origin Origin, items ...Item) {
	for i := range items {
		if typ, payload, ok := opaquePayload(&items[i]); ok && payload != "" {
			o.Set(typ+"\x00"+payload, origin)
		}
	}
}

// StandIn is the text of the message that stands for a compaction item
// another backend wrote (see Retarget): its content is encrypted, so no
// summary can be read from it.
const StandIn = "[earlier turns were compacted by another backend and are omitted]"

// Retarget returns items made sendable to the backend to: a reasoning
// item whose encrypted content o records as another backend's is left out
// (with it, the item the API binds it to stays: only the reasoning goes),
// and such a compaction item is replaced by a user message holding
// StandIn, so the request never carries a blob the new backend cannot
// decode; the items before it, if the transcript still holds them, are
// then trimmed as any others. Items o does not know are kept. n counts
// the items left out or replaced; items is not modified and is returned
// itself when n is 0.
func Retarget(items []Item, o *Origins, to Origin) (out []Item, n int) {
	for i := range items {
		typ, payload, ok := opaquePayload(&items[i])
		foreign := ok && payload != "" && o.Foreign(typ+"\x00"+payload, to)
		if !foreign {
			if out != nil {
				out = append(out, items[i])
			}
			continue
		}
		if out == nil {
			out = append(make([]Item, 0, len(items)), items[:i]...)
		}
		n++
		if typ == "compaction" {
			out = append(out, responses.ResponseInputItemParamOfMessage(StandIn, responses.EasyInputMessageRoleUser))
		}
	}
	if out == nil {
		return items, 0
	}
	return out, n
}
