package anthropicmsg

import "strconv"

// Thinking is a request's thinking configuration, as the rules read it.
type Thinking int

// The thinking configurations.
const (
	// ThinkingUnset: no configuration; the mode depends on the model, so
	// only pairing is checked.
	ThinkingUnset Thinking = iota
	ThinkingEnabled
	ThinkingAdaptive
	ThinkingDisabled
)

// ThinkingError reports where a request breaks a rule of extended
// thinking (see the adapters' ValidateRequest). It wraps the adapter's
// ErrThinking.
type ThinkingError struct {
	// Index is the position of the offending message in the request's
	// messages.
	Index int
	// Block is the position of the offending content block in that
	// message.
	Block int
	// Reason says which rule is broken.
	Reason string
	err    error
	name   string
}

func (e *ThinkingError) Error() string {
	return "history/" + e.name + ": message " + strconv.Itoa(e.Index) + ", block " + strconv.Itoa(e.Block) + ": " + e.Reason
}

// Unwrap returns the adapter's ErrThinking.
func (e *ThinkingError) Unwrap() error { return e.err }

// NewThinkingError returns a *ThinkingError of the adapter name wrapping
// sentinel.
func NewThinkingError(name string, sentinel error, i, block int, reason string) *ThinkingError {
	return &ThinkingError{Index: i, Block: block, Reason: reason, err: sentinel, name: name}
}

// ValidateRequest checks msgs as the Messages API does for a request with
// thinking mode th: Validate always, then the rules of extended thinking
// (the adapters' ValidateRequest documents them). opens says which user
// messages open a user turn. errs are the adapter's ErrUnpaired,
// ErrCompaction and ErrThinking.
func (s *SDK[R, M, B]) ValidateRequest(msgs []M, th Thinking, opens func(types []string) bool, unpaired, misplaced, thinking error) error {
	if err := s.Validate(msgs, unpaired, misplaced); err != nil {
		return err
	}
	if th == ThinkingUnset {
		return nil
	}
	types := make([][]string, len(msgs))
	roles := make([]string, len(msgs))
	for i := range msgs {
		role, blocks, err := s.ReadMessage(&msgs[i])
		if err != nil {
			return s.Invalid(i, err.Error()) // Validate read it: does not happen
		}
		roles[i] = role
		types[i] = make([]string, len(blocks))
		for j := range blocks {
			types[i][j] = s.BlockType(&blocks[j])
		}
	}
	fail := func(i, j int, reason string) error { return NewThinkingError(s.Name, thinking, i, j, reason) }
	if th == ThinkingDisabled {
		if n := len(msgs) - 1; n >= 0 && roles[n] == RoleAssistant {
			for j, t := range types[n] {
				if t == TypeThinking {
					return fail(n, j, "thinking is disabled, and the assistant message in the final position holds a thinking block")
				}
			}
		}
		return nil
	}
	for i := range msgs {
		if roles[i] != RoleAssistant {
			continue
		}
		t := types[i]
		if th == ThinkingEnabled {
			for j := range t {
				if IsThinking(t[j]) && !IsThinking(t[0]) {
					return fail(i, 0, "the assistant message holds a thinking block, so its first block must be thinking or redacted_thinking; found "+strconv.Quote(t[0]))
				}
			}
		}
		if n := len(t); n > 0 && t[n-1] == TypeThinking {
			return fail(i, n-1, "the final block of an assistant message cannot be thinking")
		}
	}
	if th == ThinkingEnabled {
		if i := FinalTurnStart(roles, types, opens); i >= 0 && (len(types[i]) == 0 || !IsThinking(types[i][0])) {
			found := "no block"
			if len(types[i]) > 0 {
				found = strconv.Quote(types[i][0])
			}
			return fail(i, 0, "with thinking enabled, the first assistant message of the final assistant turn must start with a thinking or redacted_thinking block; found "+found)
		}
	}
	return nil
}

// FinalTurnStart returns the index of the first assistant message of the
// final assistant turn (roles and types holding each message's role and
// block types): the first assistant message after the last user message
// that opens a turn (opens says which do), or after the start when there
// is none; -1 when no assistant message follows it.
func FinalTurnStart(roles []string, types [][]string, opens func(types []string) bool) int {
	from := 0
	for i := len(roles) - 1; i >= 0; i-- {
		if roles[i] == RoleUser && opens(types[i]) {
			from = i + 1
			break
		}
	}
	for i := from; i < len(roles); i++ {
		if roles[i] == RoleAssistant {
			return i
		}
	}
	return -1
}

// UserTurn reports whether a user message of these block types opens a
// user turn, as ValidateRequest reads the API: it holds a block other than
// tool_result (or none).
func UserTurn(types []string) bool {
	for _, t := range types {
		if t != TypeToolResult {
			return true
		}
	}
	return len(types) == 0
}
