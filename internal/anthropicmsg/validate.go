package anthropicmsg

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// Validate checks msgs against the tool-pairing rules of the Messages API
// (see the adapters' Validate), the placement of compaction blocks (the
// latest compaction block with content must be the first block of the
// messages, and none may stand in a system message) and what the API
// refuses of a message's content: no content, but in the final assistant
// message, and a compaction block with empty content. unpaired is the
// adapter's ErrUnpaired; misplaced its ErrCompaction.
func (s *SDK[R, M, B]) Validate(msgs []M, unpaired, misplaced error) error {
	var prevCalls []string // tool_use IDs of the previous message, if an assistant
	for i := range msgs {
		role, blocks, err := s.ReadMessage(&msgs[i])
		if err != nil {
			return s.Invalid(i, err.Error())
		}
		if len(blocks) == 0 && (role != RoleAssistant || i != len(msgs)-1) {
			return s.Invalid(i, "a message with no content (only the final assistant message may have none)")
		}
		var calls, results []string
		other := false // a non-tool_result block was seen in this message
		for j := range blocks {
			in := s.Info(&blocks[j])
			switch in.Type {
			case TypeToolUse:
				calls = append(calls, in.ID)
			case TypeToolResult:
				id := in.ResultFor
				if role != RoleUser || !slices.Contains(prevCalls, id) {
					return s.unpaired(unpaired, i, id, "tool_result answers no tool_use of the immediately preceding assistant message")
				}
				if slices.Contains(results, id) {
					return s.unpaired(unpaired, i, id, "tool_use answered twice")
				}
				if other {
					return s.unpaired(unpaired, i, id, "tool_result block after another block; tool_result blocks must come first")
				}
				results = append(results, id)
			default:
				other = true
				if in.Compaction != nil && in.Compaction.Empty {
					return s.Invalid(i, "block "+strconv.Itoa(j)+": a compaction block with empty content")
				}
				if in.Compaction.Boundary() && (i > 0 || j > 0 || role == RoleSystem) {
					return &CompactionError{Index: i, Block: j, err: misplaced, name: s.Name}
				}
			}
		}
		for _, id := range prevCalls {
			if !slices.Contains(results, id) {
				return s.unpaired(unpaired, i-1, id, "tool_use has no tool_result in the next message")
			}
		}
		prevCalls = nil
		if role == RoleAssistant {
			prevCalls = calls
		}
	}
	if len(prevCalls) > 0 {
		return s.unpaired(unpaired, len(msgs)-1, prevCalls[0], "tool_use has no tool_result in the next message")
	}
	return nil
}

func (s *SDK[R, M, B]) unpaired(sentinel error, i int, id, reason string) error {
	return adapt.Unpaired(s.Name, "message", sentinel, i, id, reason)
}

// CompactionError reports a compaction block the API would reject as
// misplaced (error_code compaction_block_misplaced): one with content
// that is not the first block of the messages, or one in a system
// message. It wraps the adapter's ErrCompaction.
type CompactionError struct {
	// Index is the position of the message holding the block.
	Index int
	// Block is the position of the block in that message.
	Block int
	err   error
	name  string
}

func (e *CompactionError) Error() string {
	return "history/" + e.name + ": message " + strconv.Itoa(e.Index) + ", block " + strconv.Itoa(e.Block) +
		": a compaction block must be the first block of the messages, and not in a system message"
}

// Unwrap returns the adapter's ErrCompaction.
func (e *CompactionError) Unwrap() error { return e.err }

// Overhead counts with c (nil means history.Heuristic()) what params, the
// SDK's parameters of a request with its messages and system prompt
// cleared, sends besides them: the tool definitions and the
// structured-output schema, read from the JSON the SDK sends, counted
// together as one message (adapt.Overhead). It returns 0 when params does
// not encode, or its JSON does not decode: that request could not be sent
// either. Every Anthropic adapter's Overhead (SDK v1, v2 GA and beta) is
// this one, over its own parameters type.
func Overhead(c history.Counter, params any) int {
	raw, err := json.Marshal(params)
	if err != nil {
		return 0
	}
	text, ok := overheadText(raw)
	if !ok {
		return 0
	}
	return adapt.Overhead(c, text)
}

// overheadText returns what a request sends besides its messages and
// system prompt, read from raw, the JSON the SDK sends for its parameters:
// the tool definitions and the structured-output schema
// (output_config.format, and the beta output_format), one per line; ok is
// false when raw does not decode.
func overheadText(raw []byte) (text string, ok bool) {
	var req struct {
		Tools  json.RawMessage `json:"tools"`
		Output struct {
			Format json.RawMessage `json:"format"`
		} `json:"output_config"`
		Format json.RawMessage `json:"output_format"`
	}
	if json.Unmarshal(raw, &req) != nil {
		return "", false
	}
	var out []byte
	for _, field := range []json.RawMessage{req.Tools, req.Output.Format, req.Format} {
		if len(field) == 0 || string(field) == "null" || string(field) == "[]" {
			continue
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, field...)
	}
	return string(out), true
}
