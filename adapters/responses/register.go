package responses

import (
	"encoding/json"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/wireapi"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// RegisterWire makes package wire (its Transport, and the gateway built
// on it) trim OpenAI Responses requests (POST .../responses) with this
// adapter's rules, in the program that calls it: each input item is read
// from the bytes it came in (as an item built with param.Override), the
// request's parameters as TrimRequest reads them, and the trimmed body
// holds every item the trim kept as its own bytes, every other byte of
// the body as it came. A request chained onto server-held state
// (previous_response_id, conversation) is forwarded untouched, its Event
// saying why (a *ChainedError). What is read of each item, and what an
// output the trim elides or a call whose arguments it clears is rewritten
// to, is kept by the item's exact bytes (up to 64 MB for each, shared by
// every request of the program, safe for concurrent use), so that a
// transcript resent on every request is read once per distinct item;
// every byte sent is what reading the item afresh gives. Call it once,
// before the first request; it is safe to call again. Without it, package
// wire forwards Responses requests untouched (wire.ErrNotRegistered).
// cmd/histrim-gateway calls it.
func RegisterWire() {
	wireapi.Register("openai_responses", rawCodec)
}

// rawCodec is the adapter's codec over raw JSON items (see RegisterWire),
// decoding, reading and rewriting them through wireMemo.
var rawCodec = adapt.RawSplice(wireCodec(), rawContext,
	wireMemo.decode,
	func(u *Item) ([]byte, error) { return rawJSON(u) }, splice)

// wireCodec returns codec reading each item, and rewriting each it elides
// or clears, through wireMemo: a client resends its input on every
// request, and the wire decodes each item from its bytes (newOverride),
// so what is read of an item, and what it is rewritten to, is kept by
// those bytes.
func wireCodec() *adapt.Codec[reasoningContext, Item] {
	c := *codec
	c.Convert = func(rc reasoningContext, items []Item, opts []history.Option) (*adapt.View[Item], error) {
		return convertView(items, opts, rc, &wireMemo)
	}
	return &c
}

// rawContext reads what readContext reads of a request body: whether it
// chains onto server-held state, and which reasoning items the API reads
// back.
func rawContext(body json.RawMessage) (reasoningContext, error) {
	var b struct {
		PreviousResponseID *string         `json:"previous_response_id"`
		Conversation       json.RawMessage `json:"conversation"`
		Reasoning          *struct {
			Context string `json:"context"`
		} `json:"reasoning"`
	}
	_ = json.Unmarshal(body, &b) // a body wire parsed: an object; a field of another type reads as unset
	var p responses.ResponseNewParams
	if b.PreviousResponseID != nil && *b.PreviousResponseID != "" {
		p.PreviousResponseID = param.NewOpt(*b.PreviousResponseID)
	}
	if len(b.Conversation) > 0 && string(b.Conversation) != "null" {
		p.Conversation = param.Override[responses.ResponseNewParamsConversationUnion](b.Conversation)
	}
	if b.Reasoning != nil {
		p.Reasoning.Context = shared.ReasoningContext(b.Reasoning.Context)
	}
	return readContext(&p)
}
