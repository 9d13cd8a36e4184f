package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
)

// htmlCases are the small sessions whose reports are golden files.
var htmlCases = []struct {
	name   string
	args   []string // the flags; the report goes to a temporary file
	code   int
	fates  []string // fates the report must show
	reason string
}{
	{"chat", []string{"-budget", "900", "testdata/chat.jsonl"}, 0, []string{"pinned", "kept", "dropped", "breadcrumb"},
		"whole turns dropped; the breadcrumb goes where they were"},
	{"chat-fits", []string{"-budget", "100000", "testdata/chat.jsonl"}, 0, []string{"pinned", "kept"},
		"fits: nothing dropped, no event"},
	{"agent-ladder", []string{"-budget", "2000", "-elide", "-clear", "32", "-steptrim", "testdata/agent.jsonl"}, 0,
		[]string{"pinned", "kept", "dropped", "breadcrumb", "summary", "elided", "cleared", "swept"},
		"every rung but step trim: elided results, cleared arguments, the summary of a dropped turn, an orphan swept"},
	{"agent-steps", []string{"-budget", "1000", "-elide", "-steptrim", "-trigger", "0.9", "-lowwater", "0.6", "testdata/agent.jsonl"}, 0,
		[]string{"pinned", "kept", "dropped", "breadcrumb", "summary"},
		"the latest turn's oldest steps go, behind a step breadcrumb; trigger and low-water lines"},
	{"openai", []string{"-budget", "600", "testdata/openai.json"}, 0, []string{"pinned", "kept", "dropped", "breadcrumb", "swept"},
		"a request file: an orphan result swept, an unanswered call stripped (still kept)"},
	{"over-budget", []string{"-budget", "20", "testdata/chat.jsonl"}, 3, []string{"pinned", "kept", "dropped", "breadcrumb"},
		"the latest turn alone does not fit: the report is still written, exit 3"},
	{"agent-replay", []string{"-budget", "3000", "-elide", "-clear", "32", "-steptrim", "-lowwater", "0.7", "-replay", "-prices", "anthropic1h", "testdata/agent.jsonl"}, 0,
		[]string{"pinned", "kept", "dropped", "breadcrumb", "summary", "elided", "cleared", "swept"},
		"the replay's charts, totals and requests"},
}

// renderCase runs the command of c and returns the HTML it wrote.
func renderCase(t *testing.T, args []string, code int) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if got := run(append([]string{"-html", out}, args...), strings.NewReader(""), &stdout, &stderr); got != code {
		t.Fatalf("exit %d, want %d\nstderr: %s", got, code, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestHTMLGolden compares each report with testdata/golden/html/<name>.html
// and reads its bars, fates and numbers back against the trim.
func TestHTMLGolden(t *testing.T) {
	for _, c := range htmlCases {
		t.Run(c.name, func(t *testing.T) {
			got := renderCase(t, c.args, c.code)
			golden := filepath.Join("testdata", "golden", "html", c.name+".html")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("report differs from %s (%s); run go test -update and review the diff", golden, c.reason)
				}
			}
			checkReport(t, got, c.args, c.fates)
		})
	}
}

// svgRect is a rect of the report's SVG.
type svgRect struct {
	Class  string `xml:"class,attr"`
	Index  string `xml:"data-index,attr"`
	Fate   string `xml:"data-fate,attr"`
	Tokens string `xml:"data-tokens,attr"`
	Title  string `xml:"title"`
}

// svgGroup is a g of the report's SVG: a strip, a bar, a request.
type svgGroup struct {
	Class    string    `xml:"class,attr"`
	Strip    string    `xml:"data-strip,attr"`
	Turn     string    `xml:"data-turn,attr"`
	Fate     string    `xml:"data-fate,attr"`
	Tokens   string    `xml:"data-tokens,attr"`
	Messages string    `xml:"data-messages,attr"`
	Request  string    `xml:"data-request,attr"`
	Read     string    `xml:"data-read,attr"`
	Write    string    `xml:"data-write,attr"`
	Billed   string    `xml:"data-billed,attr"`
	Rects    []svgRect `xml:"rect"`
}

// svgChart is one chart of the report.
type svgChart struct {
	ID           string     `xml:"id,attr"`
	Budget       string     `xml:"data-budget,attr"`
	TokensBefore string     `xml:"data-tokens-before,attr"`
	TokensAfter  string     `xml:"data-tokens-after,attr"`
	DroppedTurns string     `xml:"data-dropped-turns,attr"`
	Groups       []svgGroup `xml:"g"`
	Lines        []struct {
		Class string `xml:"class,attr"`
	} `xml:"line"`
	Polylines []struct {
		Class  string `xml:"class,attr"`
		Points string `xml:"points,attr"`
	} `xml:"polyline"`
	Hits []svgRect `xml:"rect"`
}

// chart extracts the SVG element with the given id and parses it as XML:
// the report writes its SVG well-formed.
func chart(t *testing.T, page []byte, id string) svgChart {
	t.Helper()
	start := bytes.Index(page, []byte(`<svg class="chart" id="`+id+`"`))
	if start < 0 {
		t.Fatalf("no chart %s in the report", id)
	}
	end := bytes.Index(page[start:], []byte("</svg>"))
	var c svgChart
	if err := xml.Unmarshal(page[start:start+end+len("</svg>")], &c); err != nil {
		t.Fatalf("chart %s is not well-formed: %v", id, err)
	}
	return c
}

var ddRE = regexp.MustCompile(`<dd data-key="([a-z_]+)"[^>]*>([^<]*)</dd>`)

// figures returns the dd values of the dl with the given id, by key.
func figures(t *testing.T, page []byte, id string) map[string]string {
	t.Helper()
	start := bytes.Index(page, []byte(`id="`+id+`"`))
	if start < 0 {
		t.Fatalf("no figures %s in the report", id)
	}
	end := bytes.Index(page[start:], []byte("</dl>"))
	out := map[string]string{}
	for _, m := range ddRE.FindAllSubmatch(page[start:start+end], -1) {
		out[string(m[1])] = html.UnescapeString(string(m[2]))
	}
	return out
}

// options returns the options the flags of a case set, as the test reads
// them (not through the command's own parser).
func caseOptions(t *testing.T, args []string) (file string, budget int, opts []history.Option) {
	t.Helper()
	var elide bool
	var clearN int
	for i := 0; i < len(args); i++ {
		next := func() string { i++; return args[i] }
		atof := func(s string) float64 {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		switch args[i] {
		case "-budget":
			budget, _ = strconv.Atoi(next())
		case "-elide":
			elide = true
		case "-clear":
			clearN, _ = strconv.Atoi(next())
		case "-steptrim":
			opts = append(opts, history.WithStepTrim())
		case "-trigger":
			opts = append(opts, history.WithTrigger(atof(next())))
		case "-lowwater":
			opts = append(opts, history.WithLowWater(atof(next())))
		case "-prices":
			next()
		case "-replay":
		default:
			file = args[i]
		}
	}
	if elide {
		opts = append(opts, history.WithElision(history.ElideOptions{ClearArguments: clearN}))
	}
	return file, budget, opts
}

// checkReport reads the trim chart of page back and holds it to what
// TrimToRecentTurns returns for the same input and options.
func checkReport(t *testing.T, page []byte, args, wantFates []string) {
	t.Helper()
	file, budget, opts := caseOptions(t, args)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := parse(data, formatAuto)
	if err != nil {
		t.Fatal(err)
	}
	c := history.Heuristic()
	res, err := history.TrimToRecentTurns(msgs, budget, append(opts, history.WithCounter(c), history.WithFullCount())...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatal(err)
	}
	want := expectedFates(msgs, res)

	ch := chart(t, page, "trim-chart")
	if ch.Budget != strconv.Itoa(budget) || ch.TokensAfter != strconv.Itoa(res.TokensAfter) || ch.DroppedTurns != strconv.Itoa(res.DroppedTurns) {
		t.Errorf("chart figures budget %s, after %s, dropped turns %s; the trim has %d, %d, %d",
			ch.Budget, ch.TokensAfter, ch.DroppedTurns, budget, res.TokensAfter, res.DroppedTurns)
	}
	before := 0
	for i := range msgs {
		before += c.CountMessage(msgs[i])
	}
	if ch.TokensBefore != strconv.Itoa(before) {
		t.Errorf("chart says the transcript has %s tokens, it has %d", ch.TokensBefore, before)
	}

	// One bar per turn, and the prefix, with their tokens; every input
	// message in exactly one bar, with its fate and count.
	turns := history.Turns(msgs)
	prefixEnd := len(msgs)
	if len(turns) > 0 {
		prefixEnd = turns[0].Start
	}
	var spans []history.Turn
	if prefixEnd > 0 {
		spans = append(spans, history.Turn{Start: 0, End: prefixEnd})
	}
	spans = append(spans, turns...)
	var bars []svgGroup
	strips := map[string]svgGroup{}
	for _, g := range ch.Groups {
		switch g.Class {
		case "bar":
			bars = append(bars, g)
		case "strip":
			strips[g.Strip] = g
		}
	}
	if len(bars) != len(spans) {
		t.Fatalf("%d bars, want one per turn and one for the prefix: %d", len(bars), len(spans))
	}
	seen := make([]int, len(msgs))
	counted := map[string]int{}
	inserted := 0
	for n, b := range bars {
		s := spans[n]
		turn := n
		if prefixEnd == 0 {
			turn++
		}
		tokens := 0
		for i := s.Start; i < s.End; i++ {
			tokens += c.CountMessage(msgs[i])
		}
		barFate := "dropped"
		switch {
		case turn == 0:
			barFate = "prefix"
		case slices.Contains(res.Kept, s.Start):
			barFate = "kept"
		}
		if b.Turn != strconv.Itoa(turn) || b.Tokens != strconv.Itoa(tokens) || b.Fate != barFate || b.Messages != strconv.Itoa(s.Len()) {
			t.Errorf("bar %d = turn %s, %s tokens, %s, %s messages; want turn %d, %d tokens, %s, %d messages",
				n, b.Turn, b.Tokens, b.Fate, b.Messages, turn, tokens, barFate, s.Len())
		}
		for _, r := range b.Rects {
			if !strings.Contains(r.Class, "seg") {
				continue
			}
			counted[r.Fate]++
			i, err := strconv.Atoi(r.Index)
			if err != nil {
				t.Fatalf("bar %d: data-index %q", n, r.Index)
			}
			if i < 0 {
				inserted++
				if r.Fate != "breadcrumb" && r.Fate != "summary" {
					t.Errorf("an inserted message drawn as %s", r.Fate)
				}
				continue
			}
			seen[i]++
			if i < s.Start || i >= s.End {
				t.Errorf("message %d drawn in the bar of messages %d-%d", i, s.Start, s.End-1)
			}
			if r.Fate != want[i] {
				t.Errorf("message %d (%s) drawn as %s, want %s", i, roleName(msgs[i]), r.Fate, want[i])
			}
			if r.Tokens != strconv.Itoa(c.CountMessage(msgs[i])) {
				t.Errorf("message %d: %s tokens, want %d", i, r.Tokens, c.CountMessage(msgs[i]))
			}
			if !strings.HasPrefix(r.Title, "#"+strconv.Itoa(i)+" "+roleName(msgs[i])+" · ") || !strings.Contains(r.Title, want[i]) {
				t.Errorf("message %d: hover text %q does not say its index, role and fate", i, r.Title)
			}
		}
	}
	for i, k := range seen {
		if k != 1 {
			t.Errorf("message %d drawn %d times, want once", i, k)
		}
	}
	if n := len(res.Kept) - len(slices.DeleteFunc(slices.Clone(res.Kept), func(k int) bool { return k < 0 })); inserted != n {
		t.Errorf("%d inserted messages drawn, the trim inserted %d", inserted, n)
	}

	// The strips: the transcript in order, and what was sent, in order,
	// adding up to the trim's TokensAfter.
	var idx []int
	for _, r := range strips["transcript"].Rects {
		if strings.Contains(r.Class, "seg") {
			i, _ := strconv.Atoi(r.Index)
			idx = append(idx, i)
		}
	}
	if len(idx) != len(msgs) || !slices.IsSorted(idx) {
		t.Errorf("transcript strip draws %v, want every message in order", idx)
	}
	idx = idx[:0]
	sent := 0
	for _, r := range strips["sent"].Rects {
		if !strings.Contains(r.Class, "seg") {
			continue
		}
		i, _ := strconv.Atoi(r.Index)
		k, _ := strconv.Atoi(r.Tokens)
		sent += k
		if i >= 0 {
			idx = append(idx, i)
		}
	}
	keptIdx := slices.DeleteFunc(slices.Clone(res.Kept), func(k int) bool { return k < 0 })
	if !slices.Equal(idx, keptIdx) {
		t.Errorf("sent strip draws %v, the trim sent %v", idx, keptIdx)
	}
	if sent != res.TokensAfter {
		t.Errorf("sent strip adds up to %d tokens, the trim sent %d", sent, res.TokensAfter)
	}

	// The legend counts what the bars draw, and shows the fates the case
	// is about.
	legend := regexp.MustCompile(`<li data-fate="([a-z]+)" data-count="(\d+)">`).FindAllSubmatch(page, -1)
	if len(legend) != len(fates) {
		t.Errorf("legend has %d fates, the table %d", len(legend), len(fates))
	}
	for _, m := range legend {
		if n, _ := strconv.Atoi(string(m[2])); n != counted[string(m[1])] {
			t.Errorf("legend counts %s %s, the bars draw %d", m[1], m[2], counted[string(m[1])])
		}
	}
	for _, f := range wantFates {
		if counted[f] == 0 {
			t.Errorf("no %s message drawn: the case no longer shows it", f)
		}
	}

	// The figures.
	nums := figures(t, page, "trim-numbers")
	for key, v := range map[string]int{"budget": budget, "tokens_before": res.TokensBefore, "tokens_after": res.TokensAfter,
		"kept_turns": res.KeptTurns, "dropped_turns": res.DroppedTurns, "dropped_messages": res.DroppedMessages, "orphans_removed": res.OrphansRemoved} {
		if nums[key] != num(v) {
			t.Errorf("figure %s = %q, the trim says %d", key, nums[key], v)
		}
	}
	if res.Trimmed {
		ev := figures(t, page, "trim-event")
		if ev["elided_results"] != num(res.ElidedResults) || ev["dropped_steps"] != num(res.DroppedSteps) || ev["reason"] != history.ReasonBudget {
			t.Errorf("event figures %v, the trim elided %d results and dropped %d steps", ev, res.ElidedResults, res.DroppedSteps)
		}
	} else if !bytes.Contains(page, []byte(`<p id="trim-event">none`)) {
		t.Error("nothing trimmed, but the report shows an event")
	}
}

// expectedFates says what the trim into res did to each message of msgs,
// from the Result alone: the test's own reading, not the fates table's.
func expectedFates(msgs []history.Message, res history.Result) []string {
	swept := make([]bool, len(msgs))
	clean, _ := history.SweepOrphans(msgs)
	j := 0
	for i := range msgs {
		if j < len(clean) && clean[j].Role == msgs[i].Role && clean[j].Content == msgs[i].Content && clean[j].ToolCallID == msgs[i].ToolCallID {
			j++
		} else {
			swept[i] = true
		}
	}
	turns := history.Turns(msgs)
	prefixEnd := len(msgs)
	if len(turns) > 0 {
		prefixEnd = turns[0].Start
	}
	opening := make([]int, len(msgs)) // the opening message of each message's turn
	for _, t := range turns {
		for i := t.Start; i < t.End; i++ {
			opening[i] = t.Start
		}
	}
	out := make([]string, len(msgs))
	for i := range msgs {
		j := slices.Index(res.Kept, i)
		if j < 0 {
			out[i] = "dropped"
			if swept[i] {
				out[i] = "swept"
			}
			continue
		}
		m := res.Messages[j]
		switch {
		case m.Kind == history.KindElided && msgs[i].Kind != history.KindElided:
			out[i] = "elided"
		case m.Kind == history.KindSummary:
			out[i] = "summary"
		case m.Kind == history.KindBreadcrumb:
			out[i] = "breadcrumb"
		case m.Role == history.RoleAssistant && len(m.ToolCalls) > 0 && strings.Contains(m.ToolCalls[0].Arguments, "[arguments elided"):
			out[i] = "cleared"
		case i < prefixEnd || !slices.Contains(res.Kept, opening[i]):
			out[i] = "pinned"
		default:
			out[i] = "kept"
		}
	}
	return out
}

// TestHTMLReplay reads the replay's charts and totals back against the
// replay the command ran.
func TestHTMLReplay(t *testing.T) {
	args := htmlCases[len(htmlCases)-1].args
	page := renderCase(t, args, 0)
	file, budget, opts := caseOptions(t, args)
	msgs := readSession(t, file)
	c := history.Heuristic()
	rv, err := replay(msgs, countAll(msgs, c), c, budget, append(opts, history.WithCounter(c)), pricePresets[1])
	if err != nil {
		t.Fatal(err)
	}
	cache := chart(t, page, "replay-cache")
	var reqs []svgGroup
	for _, g := range cache.Groups {
		if g.Class == "req" {
			reqs = append(reqs, g)
		}
	}
	if len(reqs) != len(rv.Requests) {
		t.Fatalf("%d request bars, the replay has %d requests", len(reqs), len(rv.Requests))
	}
	for i, g := range reqs {
		q := rv.Requests[i]
		if g.Request != strconv.Itoa(q.N) || g.Read != strconv.Itoa(q.Read) || g.Write != strconv.Itoa(q.Write) || g.Billed != ftoa(q.Billed, 2) {
			t.Errorf("request bar %d = %+v, the replay has %+v", i, g, q)
		}
	}
	prompt := chart(t, page, "replay-prompt")
	if len(prompt.Polylines) != 1 || len(strings.Fields(prompt.Polylines[0].Points)) != len(rv.Requests) {
		t.Errorf("prompt chart: want one line with a point per request")
	}
	marks := 0
	for _, g := range prompt.Groups {
		if g.Class == "mark" {
			marks++
		}
	}
	if marks != rv.Totals.Rewrites || marks == 0 {
		t.Errorf("%d maintenance points marked, the replay has %d", marks, rv.Totals.Rewrites)
	}
	hits := 0
	for _, r := range prompt.Hits {
		if r.Class == "hit" {
			hits++
			if !strings.HasPrefix(r.Title, "request ") {
				t.Errorf("hover text %q", r.Title)
			}
		}
	}
	if hits != len(rv.Requests) {
		t.Errorf("%d hover columns, want one per request", hits)
	}
	tot := figures(t, page, "replay-totals")
	for key, v := range map[string]string{"requests": num(rv.Totals.Requests), "rewrites": num(rv.Totals.Rewrites),
		"cache_read": num(rv.Totals.Read), "cache_write": num(rv.Totals.Write), "billed": fnum(rv.Totals.Billed)} {
		if tot[key] != v {
			t.Errorf("total %s = %q, the replay says %s", key, tot[key], v)
		}
	}
	if n := bytes.Count(page, []byte(`<tr data-request="`)); n != len(rv.Requests) {
		t.Errorf("%d rows in the requests table, want %d", n, len(rv.Requests))
	}
}

// TestHTMLSelfContained checks that a report fetches nothing: no script,
// no external stylesheet, image or font, no URL but the report's own
// patterns and an empty icon. Transcript text is escaped, so every raw
// tag is the report's own.
func TestHTMLSelfContained(t *testing.T) {
	page := renderCase(t, htmlCases[2].args, 0)
	page = append(page, renderCase(t, htmlCases[len(htmlCases)-1].args, 0)...)
	hostile := filepath.Join(t.TempDir(), "hostile.jsonl")
	if err := os.WriteFile(hostile, []byte(`{"role":"user","content":"<script>alert(1)</script><img src=\"http://example.com/x.png\"> ]]> </svg> & \u2028"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	page = append(page, renderCase(t, []string{"-budget", "100", hostile}, 0)...)
	tags := regexp.MustCompile(`<[a-zA-Z!][^>]*>`).FindAll(page, -1)
	if len(tags) < 100 {
		t.Fatalf("only %d tags found", len(tags))
	}
	bad := regexp.MustCompile(`(?i)^<(script|img|iframe|object|embed|image|use|foreignObject)\b|\b(src|xlink:href)=|@import`)
	url := regexp.MustCompile(`url\(([^)]*)\)`)
	for _, tag := range tags {
		s := string(tag)
		if bad.MatchString(s) {
			t.Errorf("a tag that fetches or runs something: %s", s)
		}
		if strings.Contains(s, "href=") && s != `<link rel="icon" href="data:,">` {
			t.Errorf("a link: %s", s)
		}
		for _, u := range url.FindAllStringSubmatch(s, -1) {
			if !strings.HasPrefix(u[1], "#pat-") {
				t.Errorf("a URL that is not one of the report's patterns: %s", s)
			}
		}
	}
	for _, css := range regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllSubmatch(page, -1) {
		for _, u := range url.FindAllSubmatch(css[1], -1) {
			if !bytes.HasPrefix(u[1], []byte("#pat-")) {
				t.Errorf("a URL in the style sheet: %s", u[0])
			}
		}
	}
	if bytes.Contains(page, []byte("<script>alert")) || !bytes.Contains(page, []byte("&lt;script&gt;alert(1)&lt;/script&gt;")) {
		t.Error("transcript text is not escaped")
	}
}

// TestFatesExclusive holds the fates table to its rule: exactly one row
// accepts any message a trim can produce, and every row has the fields the
// legend and the patterns need.
func TestFatesExclusive(t *testing.T) {
	user := history.Message{Role: history.RoleUser, Content: "task"}
	tool := history.Message{Role: history.RoleTool, ToolCallID: "c", Content: "result"}
	elidedIn := history.Message{Role: history.RoleTool, ToolCallID: "c", Content: "[elided]", Kind: history.KindElided}
	call := history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c", Name: "f", Arguments: `{"a":1}`}, {ID: "d", Name: "g", Arguments: "{}"}}}
	summary := history.Message{Role: history.RoleUser, Content: "so far", Kind: history.KindSummary}
	crumb := history.Breadcrumb()
	elidedOut := tool
	elidedOut.Kind, elidedOut.Content = history.KindElided, "[elided tool result]"
	cutOut := tool
	cutOut.Kind, cutOut.Content = history.KindElided, "[cut tool result: f, 900 tokens cut to fit the context window; ...]\nexcerpt:\nresult"
	cleared := call.Clone()
	cleared.ToolCalls[0].Arguments = `{"elided":"[arguments elided: 9 tokens]"}`
	stripped := call.Clone()
	stripped.ToolCalls = stripped.ToolCalls[1:]
	pairs := []struct {
		in, sent *history.Message
		want     string // the fate when neither in the prefix nor lifted; "" when it depends
	}{
		{&user, nil, "dropped"}, {&user, &user, "kept"},
		{&tool, nil, "dropped"}, {&tool, &tool, "kept"}, {&tool, &elidedOut, "elided"}, {&tool, &cutOut, "cut"},
		{&elidedIn, &elidedIn, "kept"},
		{&call, &call, "kept"}, {&call, &cleared, "cleared"}, {&call, &stripped, "kept"},
		{&summary, &summary, "summary"}, {&crumb, &crumb, "breadcrumb"},
		{nil, &crumb, "breadcrumb"}, {nil, &summary, "summary"},
	}
	for _, p := range pairs {
		for _, prefix := range []bool{false, true} {
			for _, lifted := range []bool{false, true} {
				for _, swept := range []bool{false, true} {
					if swept && p.sent != nil || (prefix || lifted) && p.in == nil {
						continue // not a state a trim produces
					}
					f := msgFacts{in: p.in, sent: p.sent, prefix: prefix, lifted: lifted, swept: swept}
					var rows []string
					for _, row := range fates {
						if row.match != nil && row.match(&f) {
							rows = append(rows, row.Name)
						}
					}
					want := p.want
					switch {
					case swept:
						want = "swept"
					case (prefix || lifted) && want == "kept":
						want = "pinned"
					}
					if len(rows) != 1 || rows[0] != want {
						t.Errorf("in %v, sent %v, prefix %v, lifted %v, swept %v: rows %v accept it, want [%s]", p.in, p.sent, prefix, lifted, swept, rows, want)
					}
				}
			}
		}
	}
	names := map[string]bool{}
	for _, row := range fates {
		if names[row.Name] || row.Name == "" || row.Help == "" || row.Color == "" || row.Mark == "" || row.Ink == "" {
			t.Errorf("row %+v: every row needs a unique name, a help text, a colour, a mark and ink", row.Name)
		}
		names[row.Name] = true
	}
	marks := map[string]string{}
	for _, row := range fates {
		if other, ok := marks[row.Mark]; ok {
			t.Errorf("fates %s and %s share the mark %s: they would differ by colour alone", other, row.Name, row.Mark)
		}
		marks[row.Mark] = row.Name
		if row.Mark != "solid" && !strings.Contains(reportTemplate, `eq .Mark "`+row.Mark+`"`) {
			t.Errorf("fate %s: the template draws no mark %s", row.Name, row.Mark)
		}
	}
	for _, name := range []string{"kept", "dropped", "elided", "cut", "pinned", "breadcrumb", "summary"} {
		if !names[name] {
			t.Errorf("no fate %s (issue 29 names it)", name)
		}
	}
}

// TestHTMLWriteError: a report that cannot be written is an input-side
// error with the histrim: prefix, after the text report.
func TestHTMLWriteError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "no", "such", "dir", "report.html")
	code := run([]string{"-budget", "900", "-html", out, "testdata/chat.jsonl"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitInput || !strings.HasPrefix(stderr.String(), "histrim: ") || !strings.Contains(stderr.String(), "report.html") {
		t.Errorf("exit %d, stderr %q; want exit %d and a histrim: error naming the file", code, stderr.String(), exitInput)
	}
	if !strings.Contains(stdout.String(), "result:") {
		t.Error("the text report is not printed")
	}
}

// TestHTMLLinear checks that the report grows linearly with the session:
// the bytes a message adds do not depend on how many there are.
func TestHTMLLinear(t *testing.T) {
	size := func(turns int) int {
		var msgs []history.Message
		msgs = append(msgs, history.Message{Role: history.RoleSystem, Content: "You are an agent."})
		for k := range turns {
			id := "c" + strconv.Itoa(k)
			msgs = append(msgs,
				history.Message{Role: history.RoleUser, Content: "Task " + strconv.Itoa(k) + ": " + strings.Repeat("do it well ", 30)},
				history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: "run", Arguments: `{"cmd":"make"}`}}},
				history.Message{Role: history.RoleTool, ToolCallID: id, Content: strings.Repeat("output line\n", 80)},
				history.Message{Role: history.RoleAssistant, Content: "Done."})
		}
		c := history.Heuristic()
		counts := countAll(msgs, c)
		res, err := history.TrimToRecentTurns(msgs, 5000, history.WithCounter(c), history.WithFullCount(), history.WithElision(history.ElideOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		r := newReport(msgs, res, nil, counts, c)
		var buf bytes.Buffer
		if err := writeHTML(&buf, htmlOptions{name: "synthetic", format: "jsonl", counter: "heuristic", budget: 5000}, r, newTrimView(msgs, res, counts, c), nil); err != nil {
			t.Fatal(err)
		}
		return buf.Len()
	}
	s1, s4 := size(100), size(400)
	perMsg := float64(s4-s1) / 1200
	if perMsg > 2000 || float64(s4) > 4.2*float64(s1) {
		t.Errorf("100 turns: %d bytes, 400 turns: %d bytes (%.0f per message): the report does not grow linearly", s1, s4, perMsg)
	}
}

// BenchmarkHTMLLargest renders the report of the largest corpus session
// (by bytes) at a quarter of its tokens, with the ladder: the trim once,
// then the view and the HTML on every iteration.
func BenchmarkHTMLLargest(b *testing.B) {
	path := largestSession(b)
	msgs := readSession(b, path)
	c := history.Heuristic()
	counts := countAll(msgs, c)
	total := 0
	for _, k := range counts {
		total += k
	}
	opts := []history.Option{history.WithElision(history.ElideOptions{ClearArguments: 64}), history.WithStepTrim(), history.WithLowWater(0.7)}
	res, err := history.TrimToRecentTurns(msgs, total/4, append(opts, history.WithCounter(c), history.WithFullCount())...)
	if err != nil {
		b.Fatal(err)
	}
	r := newReport(msgs, res, nil, counts, c)
	o := htmlOptions{name: filepath.Base(path), format: "jsonl", counter: "heuristic", budget: total / 4, lowWater: 0.7, ladder: "elision · step trim"}
	var size int
	b.ReportAllocs()
	for b.Loop() {
		var w countingWriter
		if err := writeHTML(&w, o, r, newTrimView(msgs, res, counts, c), nil); err != nil {
			b.Fatal(err)
		}
		size = w.n
	}
	b.ReportMetric(float64(size), "html-bytes")
}

// BenchmarkCommandLargest runs the whole command on the largest corpus
// session with the ladder and -replay: read, parse, count, trim, replay
// every request, write the HTML.
func BenchmarkCommandLargest(b *testing.B) {
	path := largestSession(b)
	out := filepath.Join(b.TempDir(), "report.html")
	args := []string{"-budget", "40000", "-elide", "-clear", "64", "-steptrim", "-lowwater", "0.7", "-replay", "-html", out, path}
	b.ReportAllocs()
	for b.Loop() {
		if code := run(args, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	if st, err := os.Stat(out); err == nil {
		b.ReportMetric(float64(st.Size()), "html-bytes")
	}
}

// largestSession returns the largest corpus session, by bytes.
func largestSession(tb testing.TB) string {
	tb.Helper()
	var best string
	var bestSize int64 = -1
	for _, f := range corpusFiles(tb) {
		if st, err := os.Stat(f); err == nil && st.Size() > bestSize {
			best, bestSize = f, st.Size()
		}
	}
	return best
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}

// TestTrimViewPinned: a message pinned with history.WithPin in a dropped
// turn is lifted into the prompt, and drawn pinned in its turn's bar (the
// command has no flag for pins; a runtime's own trims have them).
func TestTrimViewPinned(t *testing.T) {
	msgs := readSession(t, "testdata/chat.jsonl")
	const pin = 5 // the answer of turn 1
	c := history.Heuristic()
	res, err := history.TrimToRecentTurns(msgs, 900, history.WithCounter(c), history.WithPin(pin))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.Kept, 1) || !slices.Contains(res.Kept, pin) {
		t.Fatalf("kept %v: want turn 1 dropped and message %d lifted", res.Kept, pin)
	}
	v := newTrimView(msgs, res, countAll(msgs, c), c)
	for i := range msgs {
		f := fateName(v.Msgs[i].Fate)
		switch {
		case i == pin && f != "pinned":
			t.Errorf("the pinned message is drawn %s", f)
		case i != pin && i > 0 && i < 6 && f != "dropped" && f != "swept":
			t.Errorf("message %d of the dropped turn is drawn %s", i, f)
		}
	}
	if b := v.Bars[v.Msgs[pin].Bar]; b.Fate != "dropped" || b.Turn != 1 {
		t.Errorf("the pinned message is in the bar of turn %d (%s), want turn 1 (dropped)", b.Turn, b.Fate)
	}
}
