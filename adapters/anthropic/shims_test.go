package anthropic

import (
	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/anthropicmsg"
	"github.com/histrim/history/internal/regroup"
)

// The names the adapter's own tests read the shared logic by.

// block is one content block, typed or raw JSON.
type block = anthropicmsg.Block[union]

// Block types of extended thinking.
const (
	typeThinking         = anthropicmsg.TypeThinking
	typeRedactedThinking = anthropicmsg.TypeRedactedThinking
	typeToolResult       = anthropicmsg.TypeToolResult
)

// imageMaxTokens is what an image of unknown size costs.
const imageMaxTokens = anthropicmsg.ImageMaxTokens

func imageTokens(w, h int) int { return anthropicmsg.ImageTokens(w, h) }

func readMessage(m *anthropic.MessageParam) (string, []block, error) { return sdk.ReadMessage(m) }

func blockType(b *block) string { return sdk.BlockType(b) }

func isThinking(t string) bool { return anthropicmsg.IsThinking(t) }

func inputJSON(v any) string { return anthropicmsg.InputJSON(v) }

func userTurn(types []string) bool { return anthropicmsg.UserTurn(types) }

func fromBreadcrumb(b history.Message) anthropic.MessageParam { return sdk.FromBreadcrumb(b) }

func convert(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, wantSources bool, opts []history.Option) ([]history.Message, []regroup.Slot, error) {
	return sdk.Convert(system, msgs, wantSources, opts)
}

// opensWithThinking reports whether m is an assistant message whose first
// block is a thinking or redacted_thinking block.
func opensWithThinking(m *anthropic.MessageParam) bool {
	role, blocks, err := readMessage(m)
	return err == nil && role == anthropicmsg.RoleAssistant && len(blocks) > 0 && isThinking(blockType(&blocks[0]))
}
