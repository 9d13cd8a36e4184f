// Package anthropicmsg is the Anthropic Messages API logic that the
// adapters for every version of anthropic-sdk-go share: adapters/anthropic
// (v1) and adapters/anthropicv2 (v2, its GA and its beta message types).
// The API's wire format is the same for all of them; only the Go types the
// SDKs give it differ (v1's MessageParam is a role and a content slice,
// v2's a union of user, assistant and system messages). So each adapter
// supplies an SDK value: a few small accessors over its types, and this
// package does the rest once: the conversion to history messages, the
// mapping back, the pairing and thinking rules, compaction blocks, cache
// breakpoints, the origins of opaque blocks and the overhead.
//
// Everything the typed accessors do not read (a block built with
// param.Override, a block type an accessor leaves out, a message of a
// family read through its JSON only) is read from the JSON the SDK sends,
// which is the API's wire format: so every block type counts and converts
// the same whatever SDK version carries it.
package anthropicmsg

import (
	"encoding/json"

	"github.com/histrim/history"
)

// Roles of the Messages API.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
)

// Block types the rules read.
const (
	TypeText             = "text"
	TypeThinking         = "thinking"
	TypeRedactedThinking = "redacted_thinking"
	TypeToolUse          = "tool_use"
	TypeToolResult       = "tool_result"
	TypeCompaction       = "compaction"
)

// SDK is what one family of SDK types supplies: R is the type of the
// separate system prompt ([]TextBlockParam), M the message type, B the
// content block union. A nil accessor means "read through the JSON" (see
// the package documentation); Name, Override, OverrideBlock, Notice and
// System are required.
type SDK[R, M, B any] struct {
	// Name names the adapter in errors ("anthropic": "history/anthropic: ...").
	Name string
	// Message returns the role and blocks of m; ok is false when m must
	// be read through its JSON (built with param.Override, or a variant
	// whose blocks are not of type B).
	Message func(m *M) (role string, content []B, ok bool)
	// Type returns the type of a typed block ("" when the union is empty).
	Type func(b *B) string
	// Overridden reports whether the parts of b the rules read were built
	// with param.Override, so that b is read through its JSON.
	Overridden func(b *B) bool
	// Describe reads a typed block that is not overridden; ok is false
	// for a type Describe does not read, which is then read through its
	// JSON.
	Describe func(b *B) (Info, bool)
	// Decode decodes one block's JSON into B; ok is false when B does not
	// model its type (the block then stays raw JSON).
	Decode func(raw json.RawMessage) (B, bool)
	// WithContent returns a copy of m, a message Message read, holding
	// content instead of its blocks (role and extra fields kept).
	WithContent func(m M, content []B) M
	// ElideResult returns a typed copy of the tool_result block b whose
	// content is one text block holding text; ok is false when b must be
	// rewritten at the JSON level.
	ElideResult func(b *B, text string) (B, bool)
	// WithInput returns a typed copy of the tool_use block b whose input
	// is args, sent as it is; ok is false as for ElideResult.
	WithInput func(b *B, args string) (B, bool)
	// Override returns a message that sends raw (param.Override).
	Override func(raw json.RawMessage) M
	// OverrideBlock returns a block that sends raw (param.Override).
	OverrideBlock func(raw json.RawMessage) B
	// Notice returns a message of role (user or assistant) holding one
	// text block.
	Notice func(role, text string) M
	// System returns the texts of the system prompt's blocks, and whether
	// each carries a cache_control marker.
	System func(r R) (texts []string, cached []bool)
	// Memo, when set, returns what read returns for m, or what it
	// returned for an earlier message that reads the same: the wire, whose
	// messages are their bytes, keeps each one's by its bytes, so that a
	// transcript resent on every request is read once per distinct
	// message. An error is never kept. What it returns is read only, by
	// every request it serves. Nil reads every message on every call.
	Memo func(m *M, read func(m *M) (role string, infos []Info, err error)) (string, []Info, error)
	// Reuse, when true, gives the arrays a trim's conversion built (a
	// history message and a slot per message or more) to the next
	// conversion once the View's Back has returned: for a caller that
	// reads nothing of the Result's Messages after Back (the wire, whose
	// messages are bytes); Back's output never shares them.
	Reuse bool
}

// Info is what the rules read of one content block.
type Info struct {
	// Type is the block's "type".
	Type string
	// ID, Name and Input are a tool_use block's id, name and input (its
	// JSON text).
	ID, Name, Input string
	// ResultFor is a tool_result block's tool_use_id.
	ResultFor string
	// Parts are what the block costs: its text, image, document or
	// reasoning; a tool_result's content.
	Parts []history.Part
	// Cache reports a cache_control marker on the block.
	Cache bool
	// Compaction describes a compaction block; nil for other blocks.
	Compaction *Compaction
}

// Compaction is what the rules read of a compaction block.
type Compaction struct {
	// Null reports a block whose content is null or absent: a failed
	// compaction, which the API treats as a no-op.
	Null bool
	// Empty reports a block whose content is the empty string, which the
	// API rejects ("Empty string content is not allowed").
	Empty bool
	// Payload is the block's opaque part (encrypted_content and
	// signature), which records the backend that wrote it.
	Payload string
}

// Boundary reports whether the compaction stands for what precedes it: a
// compaction with content. A null one is a no-op and an empty one is left
// out of every output.
func (c *Compaction) Boundary() bool { return c != nil && !c.Null && !c.Empty }

// Block is one content block: Typed when it is a variant B models with
// typed fields, Raw JSON otherwise (a block built with param.Override, of
// a type the SDK does not model, or of a message read through its JSON).
type Block[B any] struct {
	Typed *B
	Raw   json.RawMessage
}
