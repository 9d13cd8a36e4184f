package anthropicv2_test

import (
	"fmt"

	"encoding/json"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"strings"

	hanthropic "github.com/histrim/history/adapters/anthropicv2"
)

// A transcript the server compacted: Trim sends the compaction block
// first, byte for byte, and nothing before it.
func ExampleTrim_compaction() {
	compaction := param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(
		`{"type":"compaction","content":"The user asked for a review of pkg/a; done.","encrypted_content":"ZW5j","signature":"c2ln","tool_changes":[]}`))
	msgs := []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("Review pkg/a. " + strings.Repeat("Long context. ", 500))),
		anthropic.NewAssistantMessage(compaction, anthropic.NewTextBlock("Reviewed.")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("Now pkg/b.")),
	}
	out, res, err := hanthropic.Trim(nil, msgs, 100_000)
	if err != nil {
		panic(err)
	}
	for _, m := range out {
		raw, _ := json.Marshal(m)
		fmt.Println(string(raw))
	}
	fmt.Println("dropped:", res.DroppedMessages, "tokens sent:", res.TokensAfter < 100)
	// Output:
	// {"content":[{"type":"compaction","content":"The user asked for a review of pkg/a; done.","encrypted_content":"ZW5j","signature":"c2ln","tool_changes":[]},{"text":"Reviewed.","type":"text"}],"role":"assistant"}
	// {"content":[{"text":"Now pkg/b.","type":"text"}],"role":"user"}
	// dropped: 1 tokens sent: true
}
