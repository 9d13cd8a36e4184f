// Package pairing checks the tool-pairing rule of the OpenAI-style chat
// APIs (Chat Completions and the many endpoints that copy it), which the
// openai, langchaingo and eino adapters validate against: the tool results
// that immediately follow an assistant message with tool calls, before any
// other message, answer its calls one for one, and a result anywhere else
// is an orphan. An adapter walks its messages, tells a Checker what each
// one calls or answers, and turns the first Violation into its own error.
package pairing

// Fault is the part of the rule a message breaks.
type Fault int

const (
	// Unanswered: a call has no result before the next message that is
	// not a result. Violation.Index is the calling message.
	Unanswered Fault = iota + 1
	// Orphan: a result follows no message with calls.
	Orphan
	// Unknown: a result answers no call of the message it follows.
	Unknown
	// Twice: a result answers a call that was already answered.
	Twice
	// BadID: a call has an empty ID, or an ID another call of its message
	// has.
	BadID
)

// Violation is the first place where messages break the rule.
type Violation struct {
	Fault Fault
	// Index is the position of the offending message.
	Index int
	// ID is the tool call ID concerned.
	ID string
}

// Checker follows the exchange the messages seen so far leave open. The
// zero value is ready: no exchange is open.
type Checker struct {
	open     int // index of the calling message; meaningful while ids != nil
	ids      []string
	answered []bool
}

// Open records message i, which is not a result and makes the calls ids
// (none: nil): it closes the open exchange (see Close) and, when ids is
// not empty, opens the exchange of its calls. ids must not be modified
// while the exchange is open.
func (c *Checker) Open(i int, ids []string) *Violation {
	if v := c.Close(); v != nil {
		return v
	}
	for j, id := range ids {
		if id == "" {
			return &Violation{BadID, i, id}
		}
		for _, prev := range ids[:j] {
			if prev == id {
				return &Violation{BadID, i, id}
			}
		}
	}
	if len(ids) > 0 {
		c.open, c.ids = i, ids
		c.answered = append(c.answered[:0], make([]bool, len(ids))...)
	}
	return nil
}

// Answer records a result at message i answering the call id.
func (c *Checker) Answer(i int, id string) *Violation {
	if c.ids == nil {
		return &Violation{Orphan, i, id}
	}
	for j, call := range c.ids {
		if call != id {
			continue
		}
		if c.answered[j] {
			return &Violation{Twice, i, id}
		}
		c.answered[j] = true
		return nil
	}
	return &Violation{Unknown, i, id}
}

// Close ends the open exchange, as the next message that is not a result,
// or the end of the messages, does: a call left unanswered is a violation.
func (c *Checker) Close() *Violation {
	ids := c.ids
	c.ids = nil
	for j, ok := range c.answered[:len(ids)] {
		if !ok {
			return &Violation{Unanswered, c.open, ids[j]}
		}
	}
	return nil
}

// Reasons says, for each fault, which part of the rule is broken, in the
// words of every adapter's *PairingError.
var Reasons = [...]string{
	Unanswered: "tool call has no result before the next message that is not a result",
	Orphan:     "tool result does not follow a message with tool calls",
	Unknown:    "tool result answers no call of the message before its results",
	Twice:      "tool call answered twice",
	BadID:      "tool call id is empty or used twice in one message",
}

// Read is what Check needs of message i: whether it holds results, the
// call ids they answer or, for another message, the ids of the calls it
// makes, or an error. The error of a message of results (or of one that
// cannot be read) is returned at once; that of another message once the
// open exchange is closed, so that an unanswered call before it is
// reported first.
type Read func(i int) (results bool, ids []string, err error)

// Check walks n messages, read says what each holds, and returns the first
// violation of the rule, or the first error read returns.
func Check(n int, read Read) (*Violation, error) {
	var c Checker
	for i := range n {
		results, ids, err := read(i)
		if results {
			if err != nil {
				return nil, err
			}
			for _, id := range ids {
				if v := c.Answer(i, id); v != nil {
					return v, nil
				}
			}
			continue
		}
		if v := c.Close(); v != nil {
			return v, nil
		}
		if err != nil {
			return nil, err
		}
		if v := c.Open(i, ids); v != nil {
			return v, nil
		}
	}
	return c.Close(), nil
}
