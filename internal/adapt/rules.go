package adapt

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/pairing"
)

// Rule is one row of a provider's rules table: a rule the provider
// enforces on the messages of a request, which a trim could break, with
// what the provider answers a request that breaks it and where that is
// documented or reported (docs/providers.md has the same rows). An
// adapter's Validate is Validate over its table; adding a rule is adding
// a row.
type Rule[N any] struct {
	// Rule says what the provider requires, in a line.
	Rule string
	// Answer is the provider's error for a request that breaks it
	// (abridged where it names ids).
	Answer string
	// Source is where the rule or its answer is documented or reported.
	Source string
	// Check returns the first place where msgs break the rule: the index
	// of the offending native message and its error (a *PairingError, a
	// *MessageError, or the adapter's own error type); -1 and nil when
	// msgs keep it. It never modifies msgs.
	Check func(msgs []N) (at int, err error)
}

// Validate checks msgs against every rule of rules and returns the first
// violation in message order: the error of the rule whose Check reports
// the lowest index, the earlier row on a tie; nil when msgs keep them all.
func Validate[N any](rules []Rule[N], msgs []N) error {
	best, first := -1, error(nil)
	for i := range rules {
		at, err := rules[i].Check(msgs)
		if err != nil && (first == nil || at < best) {
			best, first = at, err
		}
	}
	return first
}

// pairingCheck returns the Check of the OpenAI-style pairing rule (see
// internal/pairing) for the adapter name, its native messages named noun
// and its sentinel ErrUnpaired: read(msgs, i) says what message i holds
// (see pairing.Read). A violation is a *PairingError; an error read
// returns is returned as it is, at the index of the message read.
func pairingCheck[N any](name, noun string, sentinel error, read func(msgs []N, i int) (results bool, ids []string, err error)) func(msgs []N) (int, error) {
	return func(msgs []N) (int, error) {
		at := -1
		v, err := pairing.Check(len(msgs), func(i int) (bool, []string, error) {
			at = i
			return read(msgs, i)
		})
		switch {
		case v != nil:
			return v.Index, Unpaired(name, noun, sentinel, v.Index, v.ID, pairing.Reasons[v.Fault])
		case err != nil:
			return at, err
		}
		return -1, nil
	}
}

// PairingRule is the row of the OpenAI-style pairing rule, which the
// Chat Completions API and the many endpoints that copy it enforce, in
// the rules table of the adapter name (its native messages named noun,
// its sentinel ErrUnpaired); read is as for pairingCheck.
func PairingRule[N any](name, noun string, sentinel error, read func(msgs []N, i int) (results bool, ids []string, err error)) Rule[N] {
	return Rule[N]{
		Rule:   "every tool call is answered by a result right after its message, before the next message that holds none, and every result answers a call of the message before its run of results",
		Answer: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. / Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
		Source: "router-for-me/CLIProxyAPI#2798, BerriAI/litellm#6505, smarter-sh/smarter#264, langchain-ai/langchain#33245",
		Check:  pairingCheck(name, noun, sentinel, read),
	}
}

// Calls says what a converted message holds for the pairing rule: a tool
// message answers its ToolCallID; any other message makes its ToolCalls.
func Calls(m *history.Message) (results bool, ids []string) {
	if m.Role == history.RoleTool {
		return true, []string{m.ToolCallID}
	}
	ids = make([]string, len(m.ToolCalls))
	for k := range m.ToolCalls {
		ids[k] = m.ToolCalls[k].ID
	}
	return false, ids
}
