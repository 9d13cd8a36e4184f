package beta_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/histrim/history"
	hbeta "github.com/histrim/history/adapters/anthropicv2/beta"
	"github.com/histrim/history/internal/adaptertest"
)

type betaMsg = anthropic.BetaMessageParam

var contractSystem = []anthropic.BetaTextBlockParam{{Text: "be brief"}}

func betaText(s string) anthropic.BetaContentBlockParamUnion { return anthropic.NewBetaTextBlock(s) }

// contractConversation is six turns of task, call, result, answer.
func contractConversation() []betaMsg {
	var msgs []betaMsg
	for i := range 6 {
		id := "toolu_" + strconv.Itoa(i)
		msgs = append(msgs, userMsg(betaText("task "+strconv.Itoa(i)+strings.Repeat(" words", 20))),
			assistantMsg(anthropic.NewBetaToolUseBlock(id, map[string]any{"q": "read"}, "read")),
			userMsg(anthropic.NewBetaToolResultBlock(id, strings.Repeat("output line\n", 40), false)),
			assistantMsg(betaText("done "+strconv.Itoa(i))))
	}
	return msgs
}

// TestContract runs the beta types through the contract every adapter
// keeps, with the compaction block the beta API returns: the retry check
// puts one in front of the conversation.
func TestContract(t *testing.T) {
	c := &adaptertest.Contract[betaMsg]{
		Trim: func(msgs []betaMsg, budget int, opts ...history.Option) ([]betaMsg, history.Result, error) {
			return hbeta.Trim(contractSystem, msgs, budget, opts...)
		},
		RecoverOverflow: func(msgs []betaMsg, err error, attempt int, opts ...history.Option) ([]betaMsg, history.Result, error) {
			return hbeta.RecoverOverflow(contractSystem, msgs, err, attempt, opts...)
		},
		Positions: hbeta.Positions, Validate: hbeta.Validate,
		ToHistory: func(msgs []betaMsg) ([]history.Message, error) { return hbeta.ToHistory(nil, msgs) },
		NewTrimmer: func(opts ...history.Option) adaptertest.Trimmer[betaMsg] {
			return hbeta.NewTrimmer(contractSystem, opts...)
		},
		NewConversations: func(s history.StateStore, opts ...history.Option) adaptertest.Conversations[betaMsg] {
			return adaptertest.BindSystem(hbeta.NewConversations(s, opts...).SystemConversations, contractSystem)
		},
		ErrUnpaired:  hbeta.ErrUnpaired,
		Conversation: contractConversation, Pinnable: 12, Calls: 1, Results: 2,
		Invalid:    []betaMsg{userMsg(betaText("hi")), userMsg(anthropic.NewBetaToolUseBlock("toolu_x", map[string]any{}, "read"))},
		Bad:        1,
		Unpaired:   contractConversation()[:2],
		UnpairedAt: 1, UnpairedID: "toolu_0",
		Overflows:    []error{errors.New(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 2000 tokens > 1000 maximum"}}`)},
		NotOverflows: []error{errors.New(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)},
		Task:         func(s string) betaMsg { return userMsg(betaText(s)) },
		Compaction: func(s string) betaMsg {
			return assistantMsg(anthropic.BetaContentBlockParamUnion{OfCompaction: &anthropic.BetaCompactionBlockParam{
				Content: param.NewOpt(s), EncryptedContent: param.NewOpt("enc=="), Signature: param.NewOpt("sig")}})
		},
	}
	c.Run(t)
}
