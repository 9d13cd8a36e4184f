package summarize

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history"
)

// req is the request of a fake SDK: what the tests read of both forms.
type req struct {
	Model, System string
	Msgs          []history.Message
	Tools         string
	Cap           int
	Forced        bool // a forced tool call: no cache-safe form
}

// fake is a Codec over req whose Send answers with reply and records what
// it was sent.
type fake struct {
	sent  []req
	reply func(r req) (string, error)
}

func (f *fake) codec() *Codec[req] {
	return &Codec[req]{
		Name: "fake",
		Prefix: func(last req, c history.Counter) ([]history.Message, int, error) {
			var out []history.Message
			if last.System != "" {
				out = append(out, history.Message{Role: history.RoleSystem, Content: last.System})
			}
			return append(out, last.Msgs...), history.EstimateText(last.Tools), nil
		},
		CacheSafe: func(last req, text string, tokens int) (req, bool) {
			if last.Forced {
				return req{}, false
			}
			last.Msgs = append(slices.Clip(last.Msgs), history.Message{Role: history.RoleUser, Content: text})
			last.Cap = tokens
			return last, true
		},
		Model: func(last req) string { return last.Model },
		Plain: func(model string, last *req, system, user string, tokens int) req {
			return req{Model: model, System: system, Msgs: []history.Message{{Role: history.RoleUser, Content: user}}, Cap: tokens}
		},
		Send: func(_ context.Context, r req) (string, bool, error) {
			f.sent = append(f.sent, r)
			text, err := f.reply(r)
			if errors.Is(err, ErrCut) {
				return text, true, nil
			}
			return text, false, err
		},
	}
}

func user(s string) history.Message { return history.Message{Role: history.RoleUser, Content: s} }
func assistant(s string) history.Message {
	return history.Message{Role: history.RoleAssistant, Content: s}
}

// conversation is a last request: a system prompt, a summary, a pinned
// task, two turns with a tool call, and the latest turn.
func conversation() req {
	return req{Model: "m", System: "You are a coder.", Tools: `{"name":"read"}`, Msgs: []history.Message{
		user("[Summary of 1 earlier turn(s): 2 messages, about 30 tokens]\nThe user wants a parser."),
		user("Task: write a JSON parser in Go"),
		user("Read main.go"),
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":""}`}}},
		{Role: history.RoleTool, ToolCallID: "c1", Content: "[elided: 300 tokens]"},
		assistant("main.go is empty."),
		user("Write the lexer"),
		assistant("Done: lexer.go."),
		user("Now the parser"),
	}}
}

// dropped is what a maintenance point drops of conversation: the two
// turns after the task, as the transcript holds them (the tool result
// whole, the call's arguments intact).
func dropped() []history.Message {
	return []history.Message{
		user("Read main.go"),
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"main.go"}`}}},
		{Role: history.RoleTool, ToolCallID: "c1", Content: "package main\n\nfunc main() {}\n"},
		assistant("main.go is empty."),
		user("Write the lexer"),
		assistant("Done: lexer.go."),
	}
}

func previous() *history.Message {
	m := user("[Summary of 1 earlier turn(s): 2 messages, about 30 tokens]\nThe user wants a parser.")
	return &m
}

func TestLocate(t *testing.T) {
	last := conversation()
	prefix, _, _ := (&fake{}).codec().Prefix(last, nil)
	tests := []struct {
		name     string
		dropped  []history.Message
		previous *history.Message
		ok       bool
		end      int
		kept     []int
		reason   string
	}{
		{name: "all found", dropped: dropped(), previous: previous(), ok: true, end: 9, kept: []int{2},
			reason: "the elided result and the cleared call are found by ids; the pinned task between summary and dropped turns stays"},
		{name: "no previous", dropped: dropped()[4:], ok: true, end: 9, kept: []int{1, 2, 3, 6},
			reason: "what is not dropped before the end stays, but a call without text is not named"},
		{name: "previous missing", dropped: dropped(), previous: &history.Message{Role: history.RoleUser, Content: "another summary"},
			reason: "a summary the last request does not hold"},
		{name: "dropped missing", dropped: append(dropped(), user("never sent")),
			reason: "a message the last request does not hold"},
		{name: "out of order", dropped: []history.Message{user("Write the lexer"), user("Read main.go")},
			reason: "the transcript's order is the request's"},
		{name: "text changed", dropped: []history.Message{user("Read main.go!")},
			reason: "a user message is found by its text"},
		{name: "other call", dropped: []history.Message{{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c2", Name: "read"}}}},
			reason: "a call is found by its id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, ok := locate(prefix, tt.dropped, tt.previous)
			if ok != tt.ok || (ok && (sc.end != tt.end || !slices.Equal(sc.kept, tt.kept))) {
				t.Errorf("locate = %+v, %v; want end %d, kept %v, %v (%s)", sc, ok, tt.end, tt.kept, tt.ok, tt.reason)
			}
		})
	}
}

func TestInstruction(t *testing.T) {
	last := conversation()
	prefix, _, _ := (&fake{}).codec().Prefix(last, nil)
	sc, _ := locate(prefix, dropped(), previous())
	text, ok := instruction(prefix, sc, true, Prompt, 1000)
	if !ok {
		t.Fatal("no instruction")
	}
	for _, want := range []string{
		pause,
		"Everything in this conversation before the user message that begins \u201cNow the parser\u201d",
		foldIn,
		staying + "the user message that begins \u201cTask: write a JSON parser in Go\u201d.",
		Prompt,
		"Keep it under about 500 words.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the instruction lacks %q:\n%s", want, text)
		}
	}

	// The whole conversation goes.
	whole, _ := instruction(prefix, scope{end: len(prefix)}, false, "G", 100)
	if !strings.HasPrefix(whole, pause+"This whole conversation"+leaving) || strings.Contains(whole, foldIn) {
		t.Errorf("whole: %s", whole)
	}

	// A message that ends the part is named by a quote that begins no
	// earlier message: longer when the short one does, none when the
	// long one does too.
	long := strings.Repeat("word ", 30)
	clash := []history.Message{user(long + "one"), user(long + "two")}
	got, ok := instruction(clash, scope{end: 1}, false, "G", 100)
	if !ok || !strings.Contains(got, "\u201c"+strings.TrimSpace(long)+" two\u201d") {
		t.Errorf("a longer quote: %v %s", ok, got)
	}
	same := []history.Message{user("continue"), user("continue")}
	if _, ok := instruction(same, scope{end: 1}, false, "G", 100); ok {
		t.Error("an ambiguous end was named")
	}
	if _, ok := instruction([]history.Message{user("a"), {Role: history.RoleUser}}, scope{end: 1}, false, "G", 100); ok {
		t.Error("an end without text was named")
	}
}

func TestQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"short", "\u201cshort\u201d"},
		{"  two\n lines  ", "\u201ctwo lines\u201d"},
		{strings.Repeat("é", 100), "\u201c" + strings.Repeat("é", 80) + "\u2026\u201d"},
	} {
		if got := quote(tt.in, quoteRunes); got != tt.want {
			t.Errorf("quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSummarizeCacheSafe: with the last request recorded, the summary
// request is that request whole, the instruction appended; the reply is a
// user message holding the trimmed text.
func TestSummarizeCacheSafe(t *testing.T) {
	f := &fake{reply: func(req) (string, error) { return "  Task: a parser.\n", nil }}
	s := New(f.codec(), Config{Summary: history.SummaryOptions{MaxTokens: 300}})
	last := conversation()
	s.Sent(last)
	got, err := s.Summarize(context.Background(), dropped(), previous())
	if err != nil {
		t.Fatal(err)
	}
	if got.Role != history.RoleUser || got.Content != "Task: a parser." {
		t.Errorf("summary %+v", got)
	}
	r := f.sent[0]
	if r.Model != last.Model || r.System != last.System || r.Tools != last.Tools || r.Cap != 300 ||
		len(r.Msgs) != len(last.Msgs)+1 || !slices.EqualFunc(r.Msgs[:len(last.Msgs)], last.Msgs, equal) {
		t.Fatalf("not the last request plus one message: %+v", r)
	}
	if ins := r.Msgs[len(last.Msgs)]; ins.Role != history.RoleUser || !strings.HasPrefix(ins.Content, pause) {
		t.Errorf("appended %+v", ins)
	}
	if len(last.Msgs) != 9 {
		t.Error("the caller's request changed")
	}

	// A newer request that dropped the turns: the one before it holds
	// them, and is the one the summary request repeats.
	newer := last
	newer.Msgs = []history.Message{last.Msgs[0], last.Msgs[1], user("[earlier turns omitted]"), last.Msgs[8]}
	s.Sent(newer)
	if _, err := s.Summarize(context.Background(), dropped(), previous()); err != nil {
		t.Fatal(err)
	}
	if r := f.sent[1]; len(r.Msgs) != len(last.Msgs)+1 {
		t.Errorf("not the request before the newest: %+v", r)
	}
	// Three newer ones (a background summary whose goroutine started
	// late): the one that held them is still used.
	s.Sent(newer)
	s.Sent(newer)
	if _, err := s.Summarize(context.Background(), dropped(), previous()); err != nil {
		t.Fatal(err)
	}
	if r := f.sent[2]; len(r.Msgs) != len(last.Msgs)+1 {
		t.Errorf("not the request three back: %+v", r)
	}
	// Four newer ones: the one that held them is forgotten.
	s.Sent(newer)
	if _, err := s.Summarize(context.Background(), dropped(), previous()); err != nil {
		t.Fatal(err)
	}
	if r := f.sent[3]; r.System == last.System {
		t.Errorf("a request four back was used: %+v", r)
	}
}

// TestStartSummary: a background summary takes the requests recorded when
// it starts, so however many requests go out before its goroutine builds
// its request, it extends one that holds what it summarises (the
// background suite failed about once in seven CI runs when the goroutine
// ran after four more requests).
func TestStartSummary(t *testing.T) {
	f := &fake{reply: func(req) (string, error) { return "Task: a parser.", nil }}
	s := New(f.codec(), Config{Summary: history.SummaryOptions{MaxTokens: 300}})
	last := conversation()
	s.Sent(last)
	bg := s.StartSummary()
	newer := last
	newer.Msgs = []history.Message{last.Msgs[0], last.Msgs[1], user("[earlier turns omitted]"), last.Msgs[8]}
	for range 6 {
		s.Sent(newer)
	}
	if _, err := bg.Summarize(context.Background(), dropped(), previous()); err != nil {
		t.Fatal(err)
	}
	if r := f.sent[0]; r.System != last.System || len(r.Msgs) != len(last.Msgs)+1 {
		t.Errorf("not the cache-safe form on the request recorded at the start: %+v", r)
	}
	// Summarize itself reads the requests as they are now: all six are
	// past the turns, so it sends the plain form.
	if _, err := s.Summarize(context.Background(), dropped(), previous()); err != nil {
		t.Fatal(err)
	}
	if r := f.sent[1]; r.System == last.System {
		t.Errorf("Summarize used a request it no longer holds: %+v", r)
	}
}

func equal(a, b history.Message) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestSummarizePlain: the plain form whenever the cache-safe one cannot
// be sent, with the prompt as its system prompt and a transcript of the
// previous summary and the dropped messages.
func TestSummarizePlain(t *testing.T) {
	small := conversation()
	tests := []struct {
		name   string
		cfg    Config
		sent   *req
		drop   []history.Message
		model  string
		reason string
	}{
		{name: "nothing sent", cfg: Config{Model: "small"}, drop: dropped(), model: "small", reason: "no last request"},
		{name: "not in the last request", cfg: Config{}, sent: &small, drop: append(dropped(), user("new")), model: "m",
			reason: "the model of the last request when the Config names none"},
		{name: "over the input bound", cfg: Config{Summary: history.SummaryOptions{InputTokens: 200}}, sent: &small, drop: dropped(), model: "m",
			reason: "the last request and the instruction exceed InputTokens"},
		{name: "forced tool call", cfg: Config{Model: "small"}, sent: &req{Model: "m", Forced: true, Msgs: conversation().Msgs}, drop: dropped(), model: "small",
			reason: "a request that cannot carry a summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{reply: func(req) (string, error) { return "ok", nil }}
			s := New(f.codec(), tt.cfg)
			if tt.sent != nil {
				s.Sent(*tt.sent)
			}
			if _, err := s.Summarize(context.Background(), tt.drop, previous()); err != nil {
				t.Fatal(err)
			}
			r := f.sent[0]
			if r.Model != tt.model || !strings.HasPrefix(r.System, plainIntro+plainFold+plainEnd) || len(r.Msgs) != 1 {
				t.Fatalf("not the plain form to %q (%s): %+v", tt.model, tt.reason, r)
			}
			if tr := r.Msgs[0].Content; !strings.Contains(tr, "The user wants a parser.") || !strings.Contains(tr, "package main") {
				t.Errorf("transcript without the previous summary or the dropped messages: %s", tr)
			}
		})
	}
	// The bound admits the cache-safe form when it fits.
	f := &fake{reply: func(req) (string, error) { return "ok", nil }}
	s := New(f.codec(), Config{Summary: history.SummaryOptions{InputTokens: 2000}})
	s.Sent(small)
	if _, err := s.Summarize(context.Background(), dropped(), previous()); err != nil || f.sent[0].System != small.System {
		t.Errorf("InputTokens 2000: %v, %+v", err, f.sent[0])
	}
	// No model anywhere: the Codec's error.
	s = New(f.codec(), Config{})
	if _, err := s.Summarize(context.Background(), dropped(), nil); !errors.Is(err, ErrNoModel) {
		t.Errorf("no model: %v", err)
	}
}

// TestSummarizeErrors: the provider's error wrapped, bad replies refused,
// a refused cache-safe request sent again plain only when it overflowed.
func TestSummarizeErrors(t *testing.T) {
	errBlank := errors.New("blank reply")
	overflow := errors.New("This model's maximum context length is 1000 tokens. However, your messages resulted in 1200 tokens.")
	down := errors.New("503 overloaded")
	tests := []struct {
		name   string
		first  error
		calls  int
		want   error
		reason string
	}{
		{name: "down", first: down, calls: 1, want: down, reason: "an error that is not an overflow is returned as it is"},
		{name: "overflow", first: overflow, calls: 2, reason: "the plain form follows an overflow"},
		{name: "cut", first: ErrCut, calls: 1, want: ErrCut, reason: "a reply cut at its cap is no summary"},
		{name: "blank", first: errBlank, calls: 1, want: ErrNoText, reason: "a reply without text is no summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{}
			f.reply = func(req) (string, error) {
				if len(f.sent) == 1 {
					if tt.first == errBlank {
						return " \n ", nil
					}
					return "", tt.first
				}
				return "plain", nil
			}
			s := New(f.codec(), Config{})
			s.Sent(conversation())
			got, err := s.Summarize(context.Background(), dropped(), previous())
			if len(f.sent) != tt.calls || !errors.Is(err, tt.want) || (tt.want != nil) != (err != nil) {
				t.Fatalf("%d calls, %v; want %d, %v (%s)", len(f.sent), err, tt.calls, tt.want, tt.reason)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "history/fake: summarizer: ") {
				t.Errorf("error %q", err)
			}
			if err == nil && got.Content != "plain" {
				t.Errorf("got %+v", got)
			}
		})
	}
	if _, err := New((&fake{}).codec(), Config{ReplyTokens: -1}).Summarize(context.Background(), nil, nil); err == nil {
		t.Error("a negative ReplyTokens is accepted")
	}
}

// TestConfig: ReplyTokens and Prompt reach the request; Option passes the
// Summary options to the Trimmer.
func TestConfig(t *testing.T) {
	f := &fake{reply: func(req) (string, error) { return strings.Repeat("long ", 400), nil }}
	s := New(f.codec(), Config{Model: "m", ReplyTokens: 4000, Prompt: "Keep the names.", Summary: history.SummaryOptions{MaxTokens: 100}})
	if _, err := s.Summarize(context.Background(), dropped(), nil); err != nil {
		t.Fatal(err)
	}
	if r := f.sent[0]; r.Cap != 4000 || !strings.Contains(r.System, "Keep the names.") || strings.Contains(r.System, Prompt) {
		t.Errorf("request %+v", r)
	}
	var status string
	tr := history.NewTrimmer(s.Option(), history.WithOnTrim(func(e history.Event) { status = e.Summary }))
	var msgs []history.Message
	for i := range 12 {
		msgs = append(msgs, user(fmt.Sprintf("question %d %s", i, strings.Repeat("x", 200))), assistant("answer"))
	}
	if _, err := tr.Trim(msgs, 400); err != nil {
		t.Fatal(err)
	}
	if status != history.SummaryTooLarge {
		t.Errorf("a 400-word summary under MaxTokens 100: %q", status)
	}
}
