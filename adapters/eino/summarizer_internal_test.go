package eino

import (
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

// TestSummaryCall: the cache-safe form appends the instruction and the cap
// alone; it is refused for a call that forces a tool call.
func TestSummaryCall(t *testing.T) {
	tests := []struct {
		name   string
		opts   []model.Option
		ok     bool
		reason string
	}{
		{name: "none", ok: true, reason: "the common case"},
		{name: "allowed", opts: []model.Option{model.WithToolChoice(schema.ToolChoiceAllowed)}, ok: true, reason: "the model may answer in text"},
		{name: "forced", opts: []model.Option{model.WithToolChoice(schema.ToolChoiceForced)}, reason: "a forced tool call leaves no text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := einoCall{msgs: []*schema.Message{schema.UserMessage("hi")}, opts: tt.opts}
			r, ok := einoSummaryCall(c, "summarise", 300)
			if ok != tt.ok || (ok && (len(r.msgs) != 2 || len(c.msgs) != 1 || *model.GetCommonOptions(nil, r.opts...).MaxTokens != 300)) {
				t.Errorf("einoSummaryCall = %v, %d messages (%s)", ok, len(r.msgs), tt.reason)
			}
		})
	}
}
