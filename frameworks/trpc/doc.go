// Package trpc plugs github.com/histrim/history into trpc-agent-go
// (trpc.group/trpc-go/trpc-agent-go, v1.11.2): a model.TailoringStrategy
// that trims whole turns without separating a tool call from its result,
// the model.TokenCounter that counts as it does, and a model wrapper that
// recovers from context overflows and calibrates on every response.
//
// # Usage
//
// Swap the tailoring strategy and the counter of trpc-agent-go's model,
// and wrap it; the model's name is the door (see Config.Model):
//
//	s := htrpc.NewStrategy(htrpc.Config{})
//	m := htrpc.Wrap(openai.New("gpt-4o-mini",
//		openai.WithEnableTokenTailoring(true),
//		openai.WithTailoringStrategy(s), openai.WithTokenCounter(s.Counter())), s)
//	agent := llmagent.New("coder", llmagent.WithModel(m), llmagent.WithTools(tools))
//
// Under the door (a name the models table knows), trpc-agent-go's budget
// is bounded by the model's window less its output room and a margin
// until the Calibration is warm, the counter is the model's, a
// Calibration per model is the Strategy's own, and the default policy's
// task preset elides old tool results before turns go.
//
// The session keeps every event; each request is trimmed, never the
// session.
//
// # What is trimmed, and when
//
// trpc-agent-go calls TailorMessages before every request with the
// request's messages (the system instruction, the session's history, the
// new user message, the steps of the current turn) and its input budget:
// the context window less its reserves (an output reserve of 2,048
// tokens, 512 for the protocol and 10% of the window by default, which a
// calibrated strategy does not need: lower them with
// openai.WithTokenTailoringConfig) and less the tools, counted with the
// TokenCounter. The Strategy keeps the leading system messages and the
// latest turn, and drops the oldest whole turns (a turn opens at a user
// message) behind one user message holding history.BreadcrumbText; with
// Elision, old tool results go first, replaced by placeholders; with
// StepTrim, the oldest steps of a latest turn that alone does not fit.
// Unanswered calls and results that answer nothing are swept out, so a
// request never breaks OpenAI's pairing rule.
//
// It reads a long history from its end: the system messages, the latest
// turn, and the messages before it back to the first from which they cost
// more than can be kept (by a lower bound of each message's count), so
// that a history of 40,000 messages costs what the part near the budget
// costs (bench/cmd/compare -strategy measures it against
// HeadOutStrategy).
//
// Wrap counts the request's tools as overhead, so that the trim's count
// is the whole request's; observes usage.PromptTokens of every response
// into the Calibration; and when the provider rejects a request for its
// length (history.IsContextOverflow of the response's error), trims what
// was sent below the sizes the error states (history.RecoverOverflow) and
// resends it, at most MaxRetries times.
//
// # Mapping
//
// One model.Message is one history.Message: system, user, assistant and
// tool roles; Content; text content parts as text, images by their
// dimensions when their data is inline (priced at their largest
// otherwise), files, audio and video by their size; ReasoningContent as a
// reasoning part; tool calls with their arguments; ToolID and ToolName of
// a tool result. Kept messages are the caller's values; an elided result
// is a copy whose Content is the placeholder (its parts dropped), an
// assistant message whose unanswered calls were stripped is a copy with
// the others.
//
// # Not supported
//
// history.WithPin and history.WithTurnStart (trpc-agent-go gives the
// strategy no stable indices; turns start at user messages, at those
// history.UserWritten accepts under the door); summaries
// (use trpc-agent-go's session summarizer, whose output arrives as a
// system or user message); streaming retries after a partial answer
// (a rejection for length comes before any chunk).
//
// # Module
//
// This is its own module, so that the core does not depend on
// trpc-agent-go. It shares the adapters' errors, notice recognition and
// call rebuilding (internal/adapt, internal/notice), so it is released
// together with the core (version.go); its conversion and the Strategy's
// reading from the end are its own.
package trpc
