package anthropicv2

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
)

var contractSystem = []anthropic.TextBlockParam{{Text: "be brief"}}

// TestContract runs the adapter through the contract every adapter keeps.
func TestContract(t *testing.T) {
	c := &adaptertest.Contract[msg]{
		Trim: func(msgs []msg, budget int, opts ...history.Option) ([]msg, history.Result, error) {
			return Trim(contractSystem, msgs, budget, opts...)
		},
		RecoverOverflow: func(msgs []msg, err error, attempt int, opts ...history.Option) ([]msg, history.Result, error) {
			return RecoverOverflow(contractSystem, msgs, err, attempt, opts...)
		},
		Positions: Positions, Validate: Validate,
		ToHistory: func(msgs []msg) ([]history.Message, error) { return ToHistory(nil, msgs) },
		NewConversations: func(s history.StateStore, opts ...history.Option) adaptertest.Conversations[msg] {
			return adaptertest.BindSystem(NewConversations(s, opts...).SystemConversations, contractSystem)
		},
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[msg] { return NewTrimmer(contractSystem, opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 12, Calls: 1, Results: 2,
		Task:       func(s string) msg { return user(text(s)) },
		Compaction: func(s string) msg { return assistant(compaction(s, 1)) },
		Invalid:    []msg{user(text("hi")), user(toolUse("toolu_x", "read"))},
		Bad:        1,
		Unpaired:   contractConversation()[:2],
		UnpairedAt: 1, UnpairedID: "toolu_0",
		Overflows:    []error{errors.New(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 2000 tokens > 1000 maximum"}}`)},
		NotOverflows: []error{errors.New(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)},
	}
	c.Run(t)
}

// TestCoreRequirement: go.mod requires the core release these tests run
// against, so that adapter and core are released and upgraded together.
func TestCoreRequirement(t *testing.T) { adaptertest.CoreRequirement(t) }

type request struct {
	System   []anthropic.TextBlockParam
	Messages []msg
}

// adapter describes this package to the shared ladder drivers.
var adapter = adaptertest.Adapter[request]{
	Trim: func(r request, budget int, opts ...history.Option) (request, history.Result, error) {
		out, res, err := Trim(r.System, r.Messages, budget, opts...)
		return request{r.System, out}, res, err
	},
	ToHistory: func(r request) ([]history.Message, error) { return ToHistory(r.System, r.Messages) },
	Validate:  func(r request) error { return Validate(r.Messages) },
	Agent: func(data []byte) request {
		s, m := genRequest(data)
		return request{s, m}
	},
	ElidedAsPart: true,
	Start:        func() request { return request{System: []anthropic.TextBlockParam{{Text: "sys"}}} },
	Task: func(r request, s string) request {
		return request{r.System, slices.Concat(r.Messages, []msg{user(text(s))})}
	},
	Step: func(r request, id, output string) request {
		return request{r.System, slices.Concat(r.Messages, []msg{assistant(toolUse(id, "run")), user(result(id, output))})}
	},
	Len:            func(r request) int { return len(r.Messages) },
	ClearArguments: true,
}

// TestLadder runs the degradation ladder and repeated trims through the
// adapter.
func TestLadder(t *testing.T) { adapter.Ladder(t) }

var seeds = [][]byte{
	{0, 3, 4, 2, 0, 5, 6, 11, 0, 1},
	{0, 4, 2, 0, 5, 20, 0, 6, 29, 0, 3, 1},
	{8, 5, 7, 0, 3, 38, 4, 0, 2, 6, 0, 5, 47},
	{0, 2, 2, 11, 3, 0, 4, 5, 0, 6, 3, 4},
}

// checkTrim is the property of every trim: the output passes Validate
// (pairing, and the compaction block first), holds at most four cache
// breakpoints, sends the latest compaction block with content byte for
// byte and nothing before it, never an empty one, and the input is not
// modified.
func checkTrim(t *testing.T, system []anthropic.TextBlockParam, msgs []msg, budget int, opts ...history.Option) {
	t.Helper()
	before := adaptertest.JSON(t, msgs)
	out, _, err := Trim(system, msgs, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	if adaptertest.JSON(t, msgs) != before {
		t.Fatalf("budget %d: the input was modified", budget)
	}
	if verr := Validate(out); verr != nil && Validate(msgs) == nil {
		t.Fatalf("budget %d: output invalid: %v\n%s", budget, verr, adaptertest.JSON(t, out))
	}
	sent := adaptertest.JSON(t, out)
	if n := strings.Count(adaptertest.JSON(t, system), `"cache_control"`) + strings.Count(sent, `"cache_control"`); n > 4 {
		t.Fatalf("budget %d: %d cache breakpoints", budget, n)
	}
	if strings.Contains(sent, `"type":"compaction","content":""`) || strings.Contains(sent, `"content":"","encrypted_content"`) {
		t.Fatalf("budget %d: an empty compaction block is sent", budget)
	}
	if latest := latestCompaction(t, msgs); latest != "" {
		if !strings.Contains(sent, latest) {
			t.Fatalf("budget %d: the latest compaction block %s is not sent byte for byte:\n%s", budget, latest, sent)
		}
		var first []json.RawMessage
		raw, _ := json.Marshal(out[0])
		var m struct{ Content []json.RawMessage }
		_ = json.Unmarshal(raw, &m)
		first = m.Content
		if len(first) == 0 || string(first[0]) != latest {
			t.Fatalf("budget %d: the output does not open with the latest compaction block:\n%s", budget, sent)
		}
	}
}

// latestCompaction returns the JSON of the latest compaction block with
// content in an assistant message of msgs, "" when there is none.
func latestCompaction(t *testing.T, msgs []msg) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].OfAssistant == nil {
			continue
		}
		for j := len(msgs[i].OfAssistant.Content) - 1; j >= 0; j-- {
			raw, _ := json.Marshal(msgs[i].OfAssistant.Content[j])
			var b struct {
				Type    string
				Content *string
			}
			_ = json.Unmarshal(raw, &b)
			if b.Type == "compaction" && b.Content != nil && *b.Content != "" {
				return string(raw)
			}
		}
	}
	return ""
}

func optionSets() [][]history.Option {
	return [][]history.Option{nil,
		{history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: -1}), history.WithStepTrim()},
		{history.WithElision(history.ElideOptions{KeepRecent: -1, MinTokens: -1, ClearArguments: 1})},
	}
}

// TestTrimProperty: every trim of the fixed seeds' requests and of 30
// generated ones, at every budget of the sweep and every option set,
// keeps the properties of checkTrim. Under the race detector, 10
// generated ones: the sweep is single-goroutine logic, each trim checked
// on its own, that the plain run covers in full, and the detector finds
// a race in any of its trims.
func TestTrimProperty(t *testing.T) {
	derived := 30
	if race.Enabled {
		derived = 10
	}
	for _, seed := range adaptertest.Seeds(seeds, derived) {
		system, msgs := genRequest(seed)
		adaptertest.Sweep(t, seed, adapter.Tokens(t, request{system, msgs}), optionSets(), func(t *testing.T, budget int, opts []history.Option) {
			checkTrim(t, system, msgs, budget, opts...)
		})
	}
}

// FuzzTrim: every trim of a generated request keeps the properties of
// checkTrim.
func FuzzTrim(f *testing.F) {
	for _, s := range seeds {
		f.Add(s, uint16(300))
	}
	f.Fuzz(func(t *testing.T, data []byte, budget16 uint16) {
		system, msgs := genRequest(data)
		for _, opts := range optionSets() {
			checkTrim(t, system, msgs, int(budget16)+1, opts...)
		}
	})
}

// FuzzCompaction: a compaction block inserted at any message of a
// generated request: whatever the budget, what precedes the latest one
// is never sent and it opens the request, byte for byte.
func FuzzCompaction(f *testing.F) {
	f.Add([]byte{0, 3, 4, 0, 5, 6}, uint8(2), uint16(200))
	f.Add([]byte{0, 4, 4, 4, 0, 1, 0, 6}, uint8(5), uint16(40))
	f.Fuzz(func(t *testing.T, data []byte, at uint8, budget16 uint16) {
		system, msgs := genRequest(data)
		pos := int(at) % (len(msgs) + 1)
		c := assistant(compaction("the summary of all before", int(at)))
		msgs = slices.Insert(msgs, pos, c)
		checkTrim(t, system, msgs, int(budget16)+1)
	})
}
