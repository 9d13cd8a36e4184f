package wire

import (
	"context"
	"log/slog"

	"github.com/histrim/history"
)

// The kinds of [Event].
const (
	// EventRequest is the event of a request the Transport read: trimmed,
	// sent as it came, or forwarded untouched for an error.
	EventRequest = "request"
	// EventTruncation is the event of a response whose usage shows that
	// the upstream read far less of the prompt than was sent.
	EventTruncation = "truncation"
)

// Where the conversation key of an [Event] came from.
const (
	// KeyHeader: the request's [ConversationHeader].
	KeyHeader = "header"
	// KeyRequest: the API's own key in the body (prompt_cache_key, else
	// user; Anthropic's metadata.user_id).
	KeyRequest = "request"
	// KeyOpening: a hash of the conversation's opening (its system
	// messages and the message after them).
	KeyOpening = "opening"
)

// Event describes what a [Transport] did with one request, or saw in one
// response. It is a plain value.
type Event struct {
	// Kind is EventRequest or EventTruncation.
	Kind string
	// API and Model are the request's.
	API   API
	Model string
	// Conversation is the conversation's key, and KeyFrom where it came
	// from (KeyHeader, KeyRequest, KeyOpening).
	Conversation, KeyFrom string
	// Forwarded reports that the request was sent as it came, untrimmed,
	// for the reason Err gives (a body that does not parse, a model the
	// table does not know, a message that does not convert).
	Forwarded bool
	// Err is why the request was forwarded untouched; or, on a request
	// sent trimmed, the trim's error (the latest turn alone over the
	// budget: sent as trimmed, and the provider judges); nil otherwise.
	Err error
	// Status is the upstream's HTTP status for the last request sent (0
	// when none answered).
	Status int
	// Budget is the request's input budget; TokensBefore and TokensAfter
	// the trim's counts (TokensBefore -1 when the trim did not count the
	// part it dropped); Messages and Sent the messages received and sent.
	Budget, TokensBefore, TokensAfter int
	Messages, Sent                    int
	// Trimmed reports that what was sent differs from what came
	// (messages dropped, results elided, notices inserted);
	// DroppedMessages and ElidedResults are the trim's figures.
	Trimmed                        bool
	DroppedMessages, ElidedResults int
	// Overflows counts the upstream's refusals for length; Recovered the
	// resends after one (each smaller than what was refused).
	Overflows, Recovered int
	// StreamOverflows counts those of Overflows that came inside a
	// streamed answer that had begun (HTTP 200): a Responses stream whose
	// first event after response.created and response.in_progress is its
	// refusal of the input for its length (an error or response.failed
	// event with code context_length_exceeded). A refused stream followed by a
	// resend (Recovered) never reached the caller, who reads the resend's
	// stream as the answer; the last one, when nothing more could go,
	// reaches the caller as the provider sent it.
	StreamOverflows int
	// HoldExpired reports that the opening lifecycle events of the
	// Responses stream the caller reads were held for the whole bound (2
	// seconds after the headers) without the stream's next event: the
	// caller got them then, and the stream passes through as it comes, a
	// refusal that came later included (the upstream stalled, or the model
	// was slow to start).
	HoldExpired bool
	// Truncated reports (EventTruncation) that the upstream counted
	// Reported tokens of a prompt the trim counted at TokensAfter: far
	// less, so it truncated the prompt silently (or its usage was
	// misread). The count does not teach the model's Calibration.
	Truncated bool
	Reported  int
	// Learnt reports that later budgets of the model stay within
	// Reported (the larger of two truncations in a row that agree within
	// 10%, each at least 2,048 tokens): for a model of a local or routed
	// server, or one the caller described (models.Model.Provider other
	// than a provider of the models table that refuses an over-long
	// prompt with an error: openai, anthropic, google, mistral, deepseek,
	// xai).
	Learnt bool
}

// fill sets the trim's figures from res.
func (e *Event) fill(res history.Result, in, sent int) {
	e.TokensBefore, e.TokensAfter = res.TokensBefore, res.TokensAfter
	e.DroppedMessages, e.ElidedResults = res.DroppedMessages, res.ElidedResults
	e.Messages, e.Sent = in, sent
	e.Trimmed = res.Trimmed || res.ElidedResults > 0 || res.OrphansRemoved > 0
}

// LogValue returns the event as a slog group.
func (e Event) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("kind", e.Kind), slog.String("api", e.API.String()), slog.String("model", e.Model),
		slog.String("conversation", e.Conversation), slog.String("key_from", e.KeyFrom),
		slog.Int("status", e.Status),
	}
	if e.Forwarded {
		attrs = append(attrs, slog.Bool("forwarded", true))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	if !e.Forwarded {
		attrs = append(attrs, slog.Int("budget", e.Budget), slog.Int("tokens_after", e.TokensAfter),
			slog.Int("messages", e.Messages), slog.Int("sent", e.Sent), slog.Bool("trimmed", e.Trimmed),
			slog.Int("dropped_messages", e.DroppedMessages), slog.Int("elided_results", e.ElidedResults))
		if e.TokensBefore >= 0 {
			attrs = append(attrs, slog.Int("tokens_before", e.TokensBefore))
		}
	}
	if e.Overflows > 0 {
		attrs = append(attrs, slog.Int("overflows", e.Overflows), slog.Int("recovered", e.Recovered))
		if e.StreamOverflows > 0 {
			attrs = append(attrs, slog.Int("stream_overflows", e.StreamOverflows))
		}
	}
	if e.HoldExpired {
		attrs = append(attrs, slog.Bool("hold_expired", true))
	}
	if e.Truncated {
		attrs = append(attrs, slog.Int("reported", e.Reported), slog.Bool("learnt", e.Learnt))
	}
	return slog.GroupValue(attrs...)
}

// emit reports ev to OnEvent and the Logger.
func (t *Transport) emit(ev Event) {
	if t.OnEvent != nil {
		t.OnEvent(ev)
	}
	l := t.Logger
	if l == nil {
		l = slog.Default()
	}
	level := slog.LevelDebug
	switch {
	case ev.Truncated:
		level = slog.LevelWarn
	case ev.Trimmed || ev.Overflows > 0 || ev.Err != nil:
		level = slog.LevelInfo
	}
	l.Log(context.Background(), level, "histrim wire", slog.Any("request", ev))
}
