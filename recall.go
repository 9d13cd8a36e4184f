// This file owns restorable elision: the Store that keeps the originals of
// elided tool results under a handle named in their placeholder, and the
// recall tool through which the model gets one back.

package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/histrim/history/internal/recallkey"
)

// Store keeps the originals of elided tool results, each under the handle
// its placeholder names, so that the model can ask for one back with the
// recall tool ([Recall]). Set it in [ElideOptions.Store]. Handles are
// derived from the result itself ([ElisionHandle]), so eliding the same
// result again, after a crash or on another replica, puts it under the same
// handle; a store shared by many conversations should scope them
// ([ScopeStore]). Implementations must be safe for concurrent use.
//
// Get takes a context and returns an error, so that a store over a
// network can be cancelled and can report that it failed. (It took neither
// before: a Store written for that interface needs both added; see
// docs/replicas.md.)
type Store interface {
	// Put keeps m under handle. It is called before the placeholder
	// replaces m, only for results that are elided; an error aborts the
	// elision as [ElideOptions.Archive]'s does. Putting the same handle
	// twice must succeed.
	Put(handle string, m Message) error
	// Get returns the message kept under handle; false, and a nil error,
	// when there is none. An error means the store could not answer.
	Get(ctx context.Context, handle string) (Message, bool, error)
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

// Get returns the message kept under handle. It never fails, and does not
// read ctx.
func (s *MemoryStore) Get(ctx context.Context, handle string) (Message, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.m[handle]
	return m, ok, nil
}

// ScopeStore returns a Store that keeps the results of one conversation
// (scope, its key) in s, a store shared by many: every handle is stored as
// the escaped scope, "/", and the handle, so two conversations that elided
// the same result (same call id and output) never share it, and the recall
// tool of one cannot read the other's. The scope is escaped ('%' as "%25",
// '/' as "%2F") so that no scope's names start with another's: "tenant1"
// cannot reach "tenant1/user2"'s results. Only handles that
// [ElisionHandle] makes are kept or looked up (Get reports any other as
// not found, Put refuses it), so an id cannot name a path. A ScopeStore of
// a ScopeStore is a scope within that scope. The handles the model sees
// are unchanged.
func ScopeStore(s Store, scope string) Store {
	if in, ok := s.(scopedStore); ok {
		return scopedStore{in.s, in.prefix + recallkey.EscapeScope(scope) + "/"}
	}
	return scopedStore{s, recallkey.EscapeScope(scope) + "/"}
}

type scopedStore struct {
	s      Store
	prefix string
}

func (s scopedStore) Put(handle string, m Message) error {
	if !recallkey.IsHandle(handle) {
		return fmt.Errorf("history: %q is not an elision handle: a scoped store keeps only those", handle)
	}
	return s.s.Put(s.prefix+handle, m)
}

func (s scopedStore) Get(ctx context.Context, handle string) (Message, bool, error) {
	if !recallkey.IsHandle(handle) {
		return Message{}, false, nil
	}
	return s.s.Get(ctx, s.prefix+handle)
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
	RecallToolSchema = `{"type":"object","properties":{"id":{"type":"string","description":"The id shown in the elided tool result, for example r3f9a0c1d2b4e6a7b8c9d0e1f2a."}},"required":["id"],"additionalProperties":false}`
)

// ErrUnknownHandle is returned by [Recall] for an id the Store does not
// hold.
var ErrUnknownHandle = errors.New("history: no elided tool result has this id")

// Recall answers a call of the recall tool: args is the call's JSON
// arguments ({"id": "..."}), and the result is the original tool result's
// text (its Content, then the text of its text parts), to send back as the
// call's result. An id the Store does not hold, or that is not a handle
// [ElisionHandle] makes (the only ids placeholders name; the Store is not
// asked), yields [ErrUnknownHandle];
// arguments that are not such an object yield an error that says so, with
// the prefix "history:". Send the error's text to the model as the result
// in either case: it can correct itself.
func Recall(s Store, args string) (string, error) {
	return RecallContext(context.Background(), s, args)
}

// RecallContext is [Recall] with a context for the Store's Get. An error
// from the Store is returned wrapped (its text starts "history:"), not as
// ErrUnknownHandle: the model should retry later rather than give up on
// the result.
func RecallContext(ctx context.Context, s Store, args string) (string, error) {
	var a struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil || a.ID == nil {
		return "", errors.New(`history: recall arguments must be {"id": "<id from the placeholder>"}`)
	}
	id := strings.TrimSpace(*a.ID)
	if !recallkey.IsHandle(id) {
		return "", ErrUnknownHandle // no placeholder names anything else
	}
	m, ok, err := s.Get(ctx, id)
	if err != nil {
		return "", fmt.Errorf("history: the store of elided results failed: %w", err)
	}
	if !ok {
		return "", ErrUnknownHandle
	}
	return resultText(&m), nil
}

// ElisionHandle returns the handle under which elision keeps tool result m
// in a [Store]: "r" and 24 hex digits (96 bits) of a SHA-256 of its tool
// call id, name, content and parts, so the same result always gets the same
// handle, and a store shared by many conversations sees no collision
// before some 10^14 results (scope it by conversation all the same, see
// [ScopeStore]).
func ElisionHandle(m Message) string {
	h := sha256.New()
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
	return "r" + hex.EncodeToString(h.Sum(nil)[:12])
}

// recallPlaceholder is the default placeholder when originals go to a Store.
func recallPlaceholder(handle, name string, tokens int) string {
	return "[elided tool result " + handle + ": " + name + ", " + strconv.Itoa(tokens) + " tokens; call " + RecallToolName + " with id " + handle + " to read it]"
}
