// This file owns restorable elision: the Store that keeps the originals of
// elided tool results under a handle named in their placeholder, and the
// recall tool through which the model gets one back.

package history

import (
	"encoding/json"
	"errors"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
)

// Store keeps the originals of elided tool results, each under the handle
// its placeholder names, so that the model can ask for one back with the
// recall tool ([Recall]). Set it in [ElideOptions.Store]. Handles are
// derived from the result itself ([ElisionHandle]), so eliding the same
// result again, after a crash or on another replica, puts it under the same
// handle. Implementations must be safe for concurrent use.
type Store interface {
	// Put keeps m under handle. It is called before the placeholder
	// replaces m, only for results that are elided; an error aborts the
	// elision as [ElideOptions.Archive]'s does. Putting the same handle
	// twice must succeed.
	Put(handle string, m Message) error
	// Get returns the message kept under handle.
	Get(handle string) (Message, bool)
}

// MemoryStore is an in-memory [Store], safe for concurrent use. The zero
// value is ready. It keeps every result it is given for its lifetime;
// persist them elsewhere (a Store of your own) when the conversation
// outlives the process.
type MemoryStore struct {
	mu sync.RWMutex
	m  map[string]Message
}

// NewMemoryStore returns an empty [MemoryStore].
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Put keeps a copy of m (its slices cloned) under handle.
func (s *MemoryStore) Put(handle string, m Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]Message)
	}
	s.m[handle] = m.Clone()
	return nil
}

// Get returns the message kept under handle.
func (s *MemoryStore) Get(handle string) (Message, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.m[handle]
	return m, ok
}

// Len returns the number of results kept.
func (s *MemoryStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// The recall tool, to declare to the model next to the runtime's own tools
// when elision keeps originals in a [Store].
const (
	// RecallToolName is the recall tool's name, which the default
	// placeholder names.
	RecallToolName = "recall_tool_result"
	// RecallToolDescription is its description for the model.
	RecallToolDescription = "Returns the full content of an earlier tool result that was elided from the conversation to save space. Pass the id shown in the elided result's placeholder."
	// RecallToolSchema is the JSON schema of its arguments.
	RecallToolSchema = `{"type":"object","properties":{"id":{"type":"string","description":"The id shown in the elided tool result, for example r3f9a0c1d2b4e."}},"required":["id"],"additionalProperties":false}`
)

// ErrUnknownHandle is returned by [Recall] for an id the Store does not
// hold.
var ErrUnknownHandle = errors.New("history: no elided tool result has this id")

// Recall answers a call of the recall tool: args is the call's JSON
// arguments ({"id": "..."}), and the result is the original tool result's
// text (its Content, then the text of its text parts), to send back as the
// call's result. An id the Store does not hold yields [ErrUnknownHandle];
// arguments that are not such an object yield an error that says so, with
// the prefix "history:". Send the error's text to the model as the result
// in either case: it can correct itself.
func Recall(s Store, args string) (string, error) {
	var a struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil || a.ID == nil {
		return "", errors.New(`history: recall arguments must be {"id": "<id from the placeholder>"}`)
	}
	id := strings.TrimSpace(*a.ID)
	m, ok := s.Get(id)
	if !ok {
		return "", ErrUnknownHandle
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, p := range m.Parts {
		if p.Type == PartText && p.Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// ElisionHandle returns the handle under which elision keeps tool result m
// in a [Store]: "r" and twelve hex digits of a hash of its tool call id,
// name, content and parts, so the same result always gets the same handle.
func ElisionHandle(m Message) string {
	h := fnv.New64a()
	for _, s := range [...]string{m.ToolCallID, m.Name, m.Content} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, p := range m.Parts {
		for _, s := range [...]string{string(p.Type), p.Text, p.MIMEType, strconv.FormatInt(p.Size, 10), strconv.Itoa(p.Width), strconv.Itoa(p.Height)} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
	}
	s := strconv.FormatUint(h.Sum64(), 16)
	s = strings.Repeat("0", 16-len(s)) + s
	return "r" + s[:12]
}

// recallPlaceholder is the default placeholder when originals go to a Store.
func recallPlaceholder(handle, name string, tokens int) string {
	return "[elided tool result " + handle + ": " + name + ", " + strconv.Itoa(tokens) + " tokens; call " + RecallToolName + " with id " + handle + " to read it]"
}
