// Command histrim shows what trimming a conversation to a token budget keeps:
// "why did my agent lose context?".
//
// Usage:
//
//	histrim -budget N [-model NAME] [-format auto|jsonl|openai|anthropic] [-json] [FILE]
//
// It reads a transcript from FILE (or standard input when FILE is absent or
// "-"): JSONL with one history.Message per line, an OpenAI chat-completion
// request ({"model":...,"messages":[...]}), or an Anthropic Messages request
// ({"system":...,"messages":[...]}). It trims it with
// history.TrimToRecentTurns and prints the outcome, the trim event, the
// token count of every turn and the messages that would be sent. -model
// counts exactly with the tiktoken encoding of an OpenAI model; without it
// the library's heuristic counter is used. -json prints one JSON object
// instead (see docs/cli.md for its fields).
//
// Exit status: 0 when the result fits the budget (trimmed or not), 3 when
// even the latest turn does not fit (the result is still printed), 1 for
// input that cannot be read or parsed or breaks the message model, 2 for
// bad flags or arguments.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/tiktoken"
)

// Exit codes.
const (
	exitOK         = 0
	exitInput      = 1
	exitUsage      = 2
	exitOverBudget = 3
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command, testable: it parses args, reads the transcript
// from the file argument or stdin, writes the report to stdout and
// diagnostics to stderr, and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("histrim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	budget := fs.Int("budget", 0, "token `budget` for the messages (required, > 0)")
	model := fs.String("model", "", "count exactly with this OpenAI `model`'s tiktoken encoding (default: heuristic estimate)")
	format := fs.String("format", formatAuto, "input `format`: auto, jsonl, openai or anthropic")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the text report")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: histrim -budget N [-model NAME] [-format auto|jsonl|openai|anthropic] [-json] [FILE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "histrim: "+format+"\n", a...)
		return code
	}
	if *budget <= 0 {
		return fail(exitUsage, "-budget must be a positive number of tokens")
	}
	if fs.NArg() > 1 {
		return fail(exitUsage, "at most one input file, got %d", fs.NArg())
	}
	switch *format {
	case formatAuto, formatJSONL, formatOpenAI, formatAnthropic:
	default:
		return fail(exitUsage, "unknown -format %q (want auto, jsonl, openai or anthropic)", *format)
	}
	counter, counterName := history.Heuristic(), "heuristic"
	if *model != "" {
		c, err := tiktoken.ForModel(*model)
		if err != nil {
			return fail(exitUsage, "-model: %v", err)
		}
		counter, counterName = c, "tiktoken "+c.Encoding()
	}

	in, name := stdin, "stdin"
	if fs.NArg() == 1 && fs.Arg(0) != "-" {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return fail(exitInput, "%v", err)
		}
		defer f.Close()
		in, name = f, fs.Arg(0)
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return fail(exitInput, "reading %s: %v", name, err)
	}
	msgs, used, err := parse(data, *format)
	if err != nil {
		return fail(exitInput, "%s: %v", name, err)
	}

	var event *history.Event
	res, err := history.TrimToRecentTurns(msgs, *budget,
		history.WithCounter(counter),
		history.WithFullCount(), // the report shows the tokens before trimming
		history.WithOnTrim(func(e history.Event) { event = &e }))
	code := exitOK
	switch {
	case errors.Is(err, history.ErrLatestTurnTooLarge):
		code = exitOverBudget
	case err != nil:
		return fail(exitInput, "%s: %v", name, err)
	}

	r := newReport(msgs, res, event, counter)
	r.Format, r.Counter, r.OverBudget = used, counterName, code == exitOverBudget
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fail(exitInput, "%v", err)
		}
	} else {
		r.write(stdout)
	}
	if code == exitOverBudget {
		fmt.Fprintf(stderr, "histrim: %v\n", err)
	}
	return code
}

// report is what histrim prints; its JSON form is the -json output.
type report struct {
	Format         string          `json:"format"`
	Counter        string          `json:"counter"`
	Budget         int             `json:"budget"`
	Messages       int             `json:"messages"`
	Trimmed        bool            `json:"trimmed"`
	OverBudget     bool            `json:"over_budget"`
	TokensBefore   int             `json:"tokens_before"`
	TokensAfter    int             `json:"tokens_after"`
	DroppedTurns   int             `json:"dropped_turns"`
	KeptTurns      int             `json:"kept_turns"`
	DroppedMsgs    int             `json:"dropped_messages"`
	OrphansRemoved int             `json:"orphans_removed"`
	Event          *history.Event  `json:"event"`
	Turns          []turnReport    `json:"turns"`
	Sent           []messageReport `json:"sent"`
}

// turnReport describes the prefix (Turn 0) or one turn.
type turnReport struct {
	// Turn is 0 for the prefix (leading system messages, pinned summaries),
	// then 1, 2, ... oldest first.
	Turn int `json:"turn"`
	// Start and End are the input indices [Start, End) of its messages.
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Tokens int    `json:"tokens"`
	Status string `json:"status"` // kept or dropped
}

// messageReport describes one message that would be sent.
type messageReport struct {
	// Index is the message's position in the input, -1 for the breadcrumb.
	Index     int    `json:"index"`
	Role      string `json:"role"`
	Kind      string `json:"kind,omitempty"`
	Tokens    int    `json:"tokens"`
	ToolCalls int    `json:"tool_calls,omitempty"`
	Stripped  int    `json:"stripped_calls,omitempty"`
	Preview   string `json:"preview"`
}

func newReport(msgs []history.Message, res history.Result, event *history.Event, c history.Counter) *report {
	r := &report{
		Budget: res.Budget, Messages: len(msgs), Trimmed: res.Trimmed,
		TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter,
		DroppedTurns: res.DroppedTurns, KeptTurns: res.KeptTurns, DroppedMsgs: res.DroppedMessages,
		OrphansRemoved: res.OrphansRemoved, Event: event,
		Turns: []turnReport{}, Sent: []messageReport{},
	}
	kept := make([]bool, len(msgs))
	for _, k := range res.Kept {
		if k >= 0 {
			kept[k] = true
		}
	}
	turns := history.Turns(msgs)
	prefixEnd := len(msgs)
	if len(turns) > 0 {
		prefixEnd = turns[0].Start
	}
	all := append([]history.Turn{{Start: 0, End: prefixEnd}}, turns...)
	for n, t := range all {
		tr := turnReport{Turn: n, Start: t.Start, End: t.End, Status: "dropped"}
		for i := t.Start; i < t.End; i++ {
			tr.Tokens += c.CountMessage(msgs[i])
			if kept[i] {
				tr.Status = "kept"
			}
		}
		if n == 0 && t.Len() == 0 {
			continue
		}
		r.Turns = append(r.Turns, tr)
	}
	for j, m := range res.Messages {
		idx := j
		if res.Kept != nil {
			idx = res.Kept[j]
		}
		mr := messageReport{Index: idx, Role: string(m.Role), Kind: string(m.Kind), Tokens: c.CountMessage(m),
			ToolCalls: len(m.ToolCalls), Preview: preview(m)}
		if idx >= 0 {
			mr.Stripped = len(msgs[idx].ToolCalls) - len(m.ToolCalls)
		}
		r.Sent = append(r.Sent, mr)
	}
	return r
}

// preview is a short, one-line view of a message.
func preview(m history.Message) string {
	var b strings.Builder
	if m.ToolCallID != "" {
		fmt.Fprintf(&b, "←%s ", m.ToolCallID)
	}
	b.WriteString(m.Content)
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(&b, " →%s(%s)", tc.Name, tc.ID)
	}
	for _, p := range m.Parts {
		fmt.Fprintf(&b, " [%s]", p.Type)
	}
	return quote(strings.TrimSpace(b.String()), 60)
}

// write prints the text report.
func (r *report) write(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("input:   %d messages (%s), counter %s, budget %d\n", r.Messages, r.Format, r.Counter, r.Budget)
	switch {
	case r.Trimmed:
		p("result:  trimmed: dropped %d turns (%d messages), kept %d turns\n", r.DroppedTurns, r.DroppedMsgs, r.KeptTurns)
	default:
		p("result:  fits: nothing dropped, %d turns\n", r.KeptTurns)
	}
	p("tokens:  %d before, %d after\n", r.TokensBefore, r.TokensAfter)
	if r.OrphansRemoved > 0 {
		p("orphans: %d unpaired tool calls/results removed\n", r.OrphansRemoved)
	}
	if r.OverBudget {
		p("WARNING: over budget: the prefix and the latest turn alone need %d tokens\n", r.TokensAfter)
	}
	if r.Event != nil {
		b, _ := json.Marshal(r.Event)
		p("event:   %s\n", b)
	} else {
		p("event:   none\n")
	}
	p("\nturns:\n")
	for _, t := range r.Turns {
		name := "prefix"
		if t.Turn > 0 {
			name = "turn " + strconv.Itoa(t.Turn)
		}
		p("  %-9s messages %4d-%-4d %7d tokens  %s\n", name, t.Start, t.End-1, t.Tokens, t.Status)
	}
	p("\nsent:\n")
	for _, m := range r.Sent {
		idx := strconv.Itoa(m.Index)
		if m.Index < 0 {
			idx = "new"
		}
		role := m.Role
		if m.Kind != "" {
			role += "/" + m.Kind
		}
		extra := ""
		if m.Stripped > 0 {
			extra = fmt.Sprintf("  (%d unanswered calls stripped)", m.Stripped)
		}
		p("  %4s  %-16s %6d  %s%s\n", idx, role, m.Tokens, m.Preview, extra)
	}
}
