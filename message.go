package history

// Role is the author of a message, as chat-completion providers name it.
type Role string

// The roles a Message may have. Any other value is rejected with ErrInvalidMessage.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Kind marks messages the library treats specially. The zero value is an
// ordinary message. Any value other than the constants below is rejected with
// ErrInvalidMessage, so that a misspelt kind cannot silently turn a pinned
// summary into an ordinary, droppable message.
type Kind string

// The special kinds of message.
const (
	// KindBreadcrumb is the library's omission notice. It never starts a turn
	// and the library never stacks two of them: a new one replaces the old.
	KindBreadcrumb Kind = "breadcrumb"
	// KindSummary is a compaction summary written by the runtime. Summaries
	// directly after the leading system messages are pinned: never dropped.
	KindSummary Kind = "summary"
	// KindNudge is a runtime-injected user-role note (a reminder, a
	// "[system: ...]" line). It never starts a turn.
	KindNudge Kind = "nudge"
)

// ToolCall is one tool invocation requested by an assistant message.
type ToolCall struct {
	// ID pairs the call with the RoleTool message that answers it. It must be
	// non-empty and unique within its assistant message; the same ID may be
	// reused by later, separate exchanges.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the raw JSON text of the arguments, as the model wrote it.
	Arguments string `json:"arguments,omitempty"`
}

// Message is one entry of a conversation, in a provider-neutral shape.
//
// The library never modifies a Message it is given: results hold copies, and a
// message whose tool calls had to be stripped is a new value with a new
// ToolCalls slice.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// Parts holds non-text content: images, files, reasoning. Text parts are
	// allowed too, for providers that split text into blocks.
	Parts []Part `json:"parts,omitempty"`
	// ToolCalls are the calls an assistant message makes. Only assistant
	// messages may carry them.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a RoleTool message answers. Required on tool
	// messages, forbidden elsewhere.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the optional author name (OpenAI "name"); for tool messages
	// some providers put the tool's name here.
	Name string `json:"name,omitempty"`
	Kind Kind   `json:"kind,omitempty"`
}

// PartType says what a Part holds.
type PartType string

// The part types. Any other value is rejected with ErrInvalidMessage.
const (
	PartText      PartType = "text"
	PartImage     PartType = "image"
	PartFile      PartType = "file"
	PartReasoning PartType = "reasoning"
)

// Part is one piece of non-plain-text content. Only the fields that matter
// for its type need to be set; the library reads them to estimate the part's
// token cost and never needs the payload itself (no base64 data is carried:
// counting by encoded length overcounts images about a thousandfold).
//
// Cost rules (see PartTokens): a part with Tokens > 0 costs exactly that;
// text and reasoning parts cost their Text; images cost by Width and Height;
// files by Size.
type Part struct {
	Type PartType `json:"type"`
	// Text is the text of a text or reasoning part.
	Text string `json:"text,omitempty"`
	// Tokens is the part's cost when the caller already knows it (for
	// example from a provider's usage report). Zero means unknown.
	Tokens int `json:"tokens,omitempty"`
	// Width and Height are an image's size in pixels. Zero means unknown.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Detail is an image's detail level: "low", "high" or "auto" (the
	// default, treated as "high").
	Detail string `json:"detail,omitempty"`
	// MIMEType is the media type of an image or file, e.g. "application/pdf".
	MIMEType string `json:"mime_type,omitempty"`
	// Size is a file's size in bytes. Zero means unknown.
	Size int64 `json:"size,omitempty"`
}
