// Command histrim shows what trimming a conversation to a token budget keeps:
// "why did my agent lose context?".
//
// Usage:
//
//	histrim serve [-addr ADDR] [-upstream URL] [-store URL] [...]
//	histrim -budget N [-model NAME] [-format auto|jsonl|openai|anthropic]
//		[-elide [-clear N]] [-steptrim] [-task] [-userturns=false] [-trigger F] [-lowwater F]
//		[-json] [-html FILE] [-replay [-prices PRESET]] [FILE]
//
// It reads a transcript from FILE (or standard input when FILE is absent or
// "-"): JSONL with one history.Message per line, an OpenAI chat-completion
// request ({"model":...,"messages":[...]}), or an Anthropic Messages request
// ({"system":...,"messages":[...]}). It trims it with
// history.TrimToRecentTurns and prints the outcome, the trim event, the
// token count of every turn and the messages that would be sent. -model
// counts exactly with the tiktoken encoding of an OpenAI model; without it
// the library's heuristic counter is used. -elide, -clear, -steptrim,
// -task, -trigger and -lowwater set the options of the trim (the
// degradation ladder, the goal-keeping preset and the compact trigger).
// Turns start only at the messages the user wrote (history.UserWritten),
// unless -userturns=false. -json prints one JSON object instead (see
// docs/cli.md for its fields).
//
// -replay also replays the transcript request by request, one request
// before every reply of the model, with one history.Trimmer and the same
// options, and reports each request's prompt, cache reads and writes and
// billed input under a price preset (-prices). -html writes a
// self-contained HTML report of the trim, and of the replay with -replay,
// to FILE, besides the report on standard output.
//
// histrim serve runs the gateway (package gateway, docs/gateway.md): a
// reverse proxy that trims every request to an LLM API on its way, with
// its conversations in memory; its flags and environment are the
// gateway's (histrim serve -h).
//
// Exit status: 0 when the result fits the budget (trimmed or not), 3 when
// even the latest turn does not fit (the result is still printed), 1 for
// input that cannot be read or parsed or breaks the message model, or an
// HTML report that cannot be written, 2 for bad flags or arguments.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/histrim/history"
	"github.com/histrim/history/gateway"
	"github.com/histrim/history/tiktoken"
)

// Exit codes.
const (
	exitOK         = 0
	exitInput      = 1
	exitUsage      = 2
	exitOverBudget = 3
)

// usageLine is the first line of the usage message.
const usageLine = "usage: histrim -budget N [-model NAME] [-format auto|jsonl|openai|anthropic] [-elide [-clear N]] [-steptrim] [-task] [-userturns=false] [-trigger F] [-lowwater F] [-json] [-html FILE] [-replay [-prices PRESET]] [FILE]"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		os.Exit(gateway.Main(ctx, "histrim serve", os.Args[2:], os.Getenv, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// config is the command line.
type config struct {
	budget            int
	model, format     string
	asJSON            bool
	html              string
	replay            bool
	elide, stepTrim   bool
	task, userTurns   bool
	clear             int
	trigger, lowWater float64 // 0 when not given
	prices            pricePreset
	file              string // "" or "-" for stdin
}

// optionFlags names the flag that sets each option the core may reject.
var optionFlags = map[string]string{
	"WithTrigger":  "-trigger",
	"WithLowWater": "-lowwater",
	"WithElision":  "-clear",
}

// parseFlags reads the command line; on failure it reports to stderr and
// returns the exit status, with ok false.
func parseFlags(args []string, stderr io.Writer) (cfg config, code int, ok bool) {
	fs := flag.NewFlagSet("histrim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.budget, "budget", 0, "token `budget` for the messages (required, > 0)")
	fs.StringVar(&cfg.model, "model", "", "count exactly with this OpenAI `model`'s tiktoken encoding (default: heuristic estimate)")
	fs.StringVar(&cfg.format, "format", formatAuto, "input `format`: auto, jsonl, openai or anthropic")
	fs.BoolVar(&cfg.asJSON, "json", false, "print one JSON object instead of the text report")
	fs.StringVar(&cfg.html, "html", "", "also write a self-contained HTML report to `file`")
	fs.BoolVar(&cfg.replay, "replay", false, "also replay the session request by request with a Trimmer and bill its prompt cache")
	fs.BoolVar(&cfg.elide, "elide", false, "elide old tool results before dropping turns (history.WithElision)")
	fs.IntVar(&cfg.clear, "clear", 0, "with -elide, also clear the arguments of their calls from `N` tokens (ElideOptions.ClearArguments)")
	fs.BoolVar(&cfg.stepTrim, "steptrim", false, "drop the oldest steps of a latest turn that does not fit (history.WithStepTrim)")
	fs.BoolVar(&cfg.task, "task", false, "the goal-keeping preset: history.WithTask, its goal the first message the user wrote (elision with digests, the cut rung, step trimming)")
	fs.BoolVar(&cfg.userTurns, "userturns", true, "turns start only at messages the user wrote, not at the ones the runtime injected (history.UserWritten); -userturns=false starts one at every user message")
	fs.Float64Var(&cfg.trigger, "trigger", 0, "trim only past `fraction` of the budget, in (0, 1] (history.WithTrigger)")
	fs.Float64Var(&cfg.lowWater, "lowwater", 0, "trim down to `fraction` of the budget, in (0, 1) (history.WithLowWater)")
	prices := fs.String("prices", pricePresets[0].Name, "prompt-cache `preset` that bills the replay: "+presetNames())
	fs.Usage = func() {
		fmt.Fprintln(stderr, usageLine)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, exitOK, false
		}
		return cfg, exitUsage, false
	}
	fail := func(format string, a ...any) (config, int, bool) {
		fmt.Fprintf(stderr, "histrim: "+format+"\n", a...)
		return cfg, exitUsage, false
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.budget <= 0 {
		return fail("-budget must be a positive number of tokens")
	}
	if fs.NArg() > 1 {
		return fail("at most one input file, got %d", fs.NArg())
	}
	cfg.file = fs.Arg(0)
	switch cfg.format {
	case formatAuto, formatJSONL, formatOpenAI, formatAnthropic:
	default:
		return fail("unknown -format %q (want auto, jsonl, openai or anthropic)", cfg.format)
	}
	if set["clear"] && !cfg.elide && !cfg.task {
		return fail("-clear needs -elide or -task: arguments are cleared with the results they produced")
	}
	if cfg.task && (cfg.elide || cfg.stepTrim) {
		return fail("-task sets elision and step trimming itself: drop -elide and -steptrim")
	}
	if set["prices"] && !cfg.replay {
		return fail("-prices needs -replay: only the replay is billed")
	}
	if set["html"] && cfg.html == "" {
		return fail("-html needs a file name")
	}
	found := false
	for _, p := range pricePresets {
		if p.Name == *prices {
			cfg.prices, found = p, true
		}
	}
	if !found {
		return fail("unknown -prices %q (want %s)", *prices, presetNames())
	}
	if !set["trigger"] {
		cfg.trigger = 0
	}
	if !set["lowwater"] {
		cfg.lowWater = 0
	}
	// The core validates the options' values: a trim of nothing reports
	// them, and only them.
	if _, err := history.TrimToRecentTurns(nil, 1, cfg.ladder(nil)...); err != nil {
		var oe *history.OptionError
		if errors.As(err, &oe) {
			name := optionFlags[oe.Option]
			if name == "" {
				name = oe.Option
			}
			return fail("%s: %s", name, oe.Reason)
		}
		return fail("%v", err)
	}
	return cfg, exitOK, true
}

// ladder returns the options the flags set for the transcript msgs, other
// than the counter: the ones the trim and the replay share.
func (c *config) ladder(msgs []history.Message) []history.Option {
	var opts []history.Option
	if c.userTurns {
		opts = append(opts, history.WithTurnStart(history.UserWritten))
	}
	if c.task {
		opts = append(opts, history.WithTask(slices.IndexFunc(msgs, history.UserWritten), history.ElideOptions{ClearArguments: c.clear}))
		if !c.userTurns {
			opts = append(opts, history.WithTurnStart(nil)) // after the preset's rule
		}
	}
	if c.elide {
		opts = append(opts, history.WithElision(history.ElideOptions{ClearArguments: c.clear}))
	}
	if c.stepTrim {
		opts = append(opts, history.WithStepTrim())
	}
	if c.trigger != 0 {
		opts = append(opts, history.WithTrigger(c.trigger))
	}
	if c.lowWater != 0 {
		opts = append(opts, history.WithLowWater(c.lowWater))
	}
	return opts
}

// ladderName describes the ladder's flags for the HTML report.
func (c *config) ladderName() string {
	var parts []string
	if c.task {
		parts = append(parts, "WithTask (digests, the cut rung, step trim)")
	}
	if c.elide {
		s := "elision"
		if c.clear > 0 {
			s += " (arguments cleared from " + strconv.Itoa(c.clear) + " tokens)"
		}
		parts = append(parts, s)
	}
	if c.stepTrim {
		parts = append(parts, "step trim")
	}
	return strings.Join(parts, " · ")
}

// run is the whole command, testable: it parses args, reads the transcript
// from the file argument or stdin, writes the report to stdout (and to the
// -html file) and diagnostics to stderr, and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "histrim: "+format+"\n", a...)
		return code
	}
	counter, counterName := history.Heuristic(), "heuristic"
	var tk *tiktoken.Counter
	if cfg.model != "" {
		c, err := tiktoken.ForModel(cfg.model)
		if err != nil {
			return fail(exitUsage, "-model: %v", err)
		}
		tk, counterName = c, "tiktoken "+c.Encoding()
	}

	in, name := stdin, "stdin"
	if cfg.file != "" && cfg.file != "-" {
		f, err := os.Open(cfg.file)
		if err != nil {
			return fail(exitInput, "%v", err)
		}
		defer f.Close()
		in, name = f, cfg.file
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return fail(exitInput, "reading %s: %v", name, err)
	}
	msgs, used, err := parse(data, cfg.format)
	if err != nil {
		return fail(exitInput, "%s: %v", name, err)
	}
	if tk != nil {
		// Every message is counted more than once (the report, the
		// replay's requests): tokenize each once.
		counter = history.NewCache(tk, max(2*len(msgs), history.DefaultCacheCapacity))
	}
	counts := make([]int, len(msgs))
	for i := range msgs {
		counts[i] = counter.CountMessage(msgs[i])
	}

	var event *history.Event
	res, err := history.TrimToRecentTurns(msgs, cfg.budget, append(cfg.ladder(msgs),
		history.WithCounter(counter),
		history.WithFullCount(), // the report shows the tokens before trimming
		history.WithOnTrim(func(e history.Event) { event = &e }))...)
	code = exitOK
	switch {
	case errors.Is(err, history.ErrLatestTurnTooLarge):
		code = exitOverBudget
	case err != nil:
		return fail(exitInput, "%s: %v", name, err)
	}
	overErr := err

	r := newReport(msgs, res, event, counts, counter, cfg.ladder(msgs)...)
	r.Format, r.Counter, r.OverBudget = used, counterName, code == exitOverBudget
	if cfg.replay {
		rv, err := replay(msgs, counts, counter, cfg.budget, append(cfg.ladder(msgs), history.WithCounter(counter)), cfg.prices)
		if err != nil {
			return fail(exitInput, "%s: replay: %v", name, err)
		}
		if rv.Front, err = front(rv, msgs, counts, counter, cfg.budget, cfg.prices); err != nil {
			return fail(exitInput, "%s: replay: %v", name, err)
		}
		r.Replay = rv
	}
	if cfg.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fail(exitInput, "%v", err)
		}
	} else {
		r.write(stdout)
	}
	if cfg.html != "" {
		// The report names its input by its base name: a file that is meant
		// to be shared should not carry the directories of the machine it
		// was made on.
		o := htmlOptions{name: filepath.Base(name), format: used, counter: counterName, budget: cfg.budget,
			trigger: cfg.trigger, lowWater: cfg.lowWater, ladder: cfg.ladderName()}
		if err := writeHTMLFile(cfg.html, o, r, newTrimView(msgs, res, counts, counter, cfg.ladder(msgs)...)); err != nil {
			return fail(exitInput, "%v", err)
		}
	}
	if code == exitOverBudget {
		fmt.Fprintf(stderr, "histrim: %v\n", overErr)
	}
	return code
}

// writeHTMLFile writes the HTML report to path.
func writeHTMLFile(path string, o htmlOptions, r *report, v *trimView) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	err = writeHTML(w, o, r, v, r.Replay)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.New("writing " + path + ": " + err.Error())
	}
	return nil
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
	// Replay is the -replay report, nil without -replay.
	Replay *replayView `json:"replay,omitempty"`
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

// newReport builds the report of the trim of msgs into res; counts are
// c's counts of msgs.
func newReport(msgs []history.Message, res history.Result, event *history.Event, counts []int, c history.Counter, opts ...history.Option) *report {
	r := &report{
		Budget: res.Budget, Messages: len(msgs), Trimmed: res.Trimmed,
		TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter,
		DroppedTurns: res.DroppedTurns, KeptTurns: res.KeptTurns, DroppedMsgs: res.DroppedMessages,
		OrphansRemoved: res.OrphansRemoved, Event: event,
		Turns: []turnReport{}, Sent: []messageReport{},
	}
	turns := history.Turns(msgs, opts...) // the turns of the trim's rule
	prefixEnd := len(msgs)
	if len(turns) > 0 {
		prefixEnd = turns[0].Start
	}
	dropped := droppedTurns(turns, sentPositions(len(msgs), res), sweptMessages(msgs), res.DroppedTurns)
	all := append([]history.Turn{{Start: 0, End: prefixEnd}}, turns...)
	for n, t := range all {
		tr := turnReport{Turn: n, Start: t.Start, End: t.End, Status: "kept"}
		if n > 0 && dropped[n-1] {
			tr.Status = "dropped"
		}
		for i := t.Start; i < t.End; i++ {
			tr.Tokens += counts[i]
		}
		if n == 0 && t.Len() == 0 {
			continue
		}
		r.Turns = append(r.Turns, tr)
	}
	modified := make([]bool, len(res.Messages))
	for _, j := range res.Modified {
		modified[j] = true
	}
	for j, m := range res.Messages {
		idx := res.Kept[j]
		tokens := 0
		if idx >= 0 && !modified[j] {
			tokens = counts[idx]
		} else {
			tokens = c.CountMessage(m)
		}
		mr := messageReport{Index: idx, Role: string(m.Role), Kind: string(m.Kind), Tokens: tokens,
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
	p("tokens:  %s before, %d after\n", tokensBefore(r.TokensBefore, strconv.Itoa), r.TokensAfter)
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
	if r.Replay != nil {
		r.Replay.write(w)
	}
}
