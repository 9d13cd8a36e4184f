package anthropic

import (
	"errors"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/anthropicmsg"
)

// ErrUnpaired is wrapped by *PairingError: the messages break the Messages
// API tool-pairing rule and the API would reject them with an HTTP 400.
var ErrUnpaired = errors.New("history/anthropic: unpaired tool_use or tool_result")

// PairingError reports where msgs break the pairing rule: Index is the
// position of the offending message in msgs (the assistant message whose
// tool_use is not answered, or the user message holding the tool_result
// that answers nothing or stands after other blocks), ID the tool_use ID
// concerned, Reason which part of the rule is broken. It wraps ErrUnpaired.
type PairingError = adapt.PairingError

// ErrCompaction is wrapped by *CompactionError: a compaction block stands
// where the Messages API rejects it.
var ErrCompaction = errors.New("history/anthropic: compaction block misplaced")

// CompactionError reports a compaction block the API would reject as
// misplaced (error_code compaction_block_misplaced): Index is the message
// holding it, Block its position there. It wraps ErrCompaction.
type CompactionError = anthropicmsg.CompactionError

// Validate checks msgs against the tool-pairing rules of the Messages API:
//
//   - every tool_use block of an assistant message must be answered by a
//     tool_result block in the very next message, which must be a user
//     message ("tool_use ids were found without tool_result blocks
//     immediately after");
//   - every tool_result block must answer a tool_use block of the
//     immediately preceding message, which must be an assistant message,
//     and each tool_use only once ("unexpected tool_use_id found in
//     tool_result blocks");
//   - in a user message, tool_result blocks come before any other block
//     (text after the results is fine, text before them is rejected).
//
// It also checks where compaction blocks stand: the latest compaction
// block with content must be the first block of msgs, and none may be in a
// system message (the API's compaction_block_misplaced); a
// *CompactionError reports one that is not.
//
// Consecutive messages of the same role are accepted (the API joins them
// into one turn, which is how a breadcrumb may precede a user message), but
// the pairing rules are checked per message as the API states them: results
// split over two user messages are reported.
// Validate returns nil when msgs pass, the first violation as a
// *PairingError (or *CompactionError) otherwise, or a *MessageError when a
// message cannot be read.
// It never modifies msgs.
func Validate(msgs []anthropic.MessageParam) error {
	return sdk.Validate(msgs, ErrUnpaired, ErrCompaction)
}
