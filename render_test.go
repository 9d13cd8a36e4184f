package history

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/histrim/history/internal/race"
)

// contentOnly renders a message as its bare content, so that tests see the
// cuts without the role prefix.
func contentOnly(m Message) string { return m.Content }

func TestRenderTranscriptClusters(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		max    int
		want   string
		reason string
	}{
		{"mark after space", "aaaa bbbb \u0301cccc", 5, "cccc", "a combining mark cut from its base never starts the text"},
		{"space carries the mark", "aaaa bbbb \u0301cccc", 6, " \u0301cccc", "a space followed by a mark is one cluster: kept whole"},
		{"word rule skips marks", "aaaa bbbb \u0301cccc", 7, "b \u0301cccc", "a mark after a space is not a word start"},
		{"acute", "xxxxe\u0301e\u0301", 3, "e\u0301", "e + combining acute stays together"},
		{"stacked marks", "xa\u0301\u0302\u0303", 3, "", "a base with three marks is one cluster of four characters"},
		{"spacing mark", "xxक\u093F", 1, "", "Devanagari vowel sign (Mc) stays with its consonant"},
		{"spacing mark whole", "xxक\u093F", 2, "क\u093F", "the whole syllable fits"},
		{"enclosing mark", "x1\u20E3", 1, "", "keycap (Me) stays with its digit"},
		{"ZWJ family", "xx👨\u200d👩\u200d👧", 4, "", "a ZWJ sequence is one cluster"},
		{"ZWJ family whole", "xx👨\u200d👩\u200d👧", 5, "👨\u200d👩\u200d👧", "all five characters fit"},
		{"flags", "x🇫🇷🇩🇪", 3, "🇩🇪", "regional indicators pair from the start of their run"},
		{"flags whole", "x🇫🇷🇩🇪", 4, "🇫🇷🇩🇪", "two whole flags"},
		{"odd flags", "🇫🇷🇩", 2, "🇩", "a lone last indicator is its own cluster"},
		{"skin tone", "x👍🏽", 1, "", "an emoji modifier stays with its emoji"},
		{"variation selector", "x❤\uFE0F", 1, "", "VS16 stays with its base"},
		{"tags", "x🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F", 6, "", "tag sequences (subdivision flags) stay whole"},
		{"hangul jamo", "x\u1100\u1161\u11A8", 2, "", "L V T jamo form one syllable"},
		{"hangul jamo whole", "x\u1100\u1161\u11A8", 3, "\u1100\u1161\u11A8", "the whole syllable fits"},
		{"hangul syllables", "x각각", 1, "각", "precomposed syllables are clusters of one"},
		{"CR LF", "ab\r\ncd", 3, "cd", "never starts between CR and LF"},
		{"invalid UTF-8", "ab\xffcd", 10, "ab\uFFFDcd", "an invalid byte is written as U+FFFD, one character"},
		{"invalid cut", "\xff\xfe\xfdab", 3, "\uFFFDab", "invalid bytes count one character each when cut"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderTranscript([]Message{{Role: RoleUser, Content: tc.text}}, tc.max, RenderOptions{Format: contentOnly})
			if got != tc.want {
				t.Errorf("RenderTranscript(%q, %d) = %q, want %q: %s", tc.text, tc.max, got, tc.want, tc.reason)
			}
			if n := utf8.RuneCountInString(got); n > tc.max {
				t.Errorf("%d characters > %d", n, tc.max)
			}
		})
	}
}

func TestRenderTranscriptDefaultFormat(t *testing.T) {
	txt := func(s string) Part { return Part{Type: PartText, Text: s} }
	tests := []struct {
		name   string
		m      Message
		want   string
		reason string
	}{
		{"plain", Message{Role: RoleUser, Content: "hi"}, "user: hi", "role: content"},
		{"text parts", Message{Role: RoleUser, Content: "a", Parts: []Part{txt("b"), {Type: PartImage}, txt(""), txt("c")}}, "user: a\nb\nc", "text parts on their own lines; images and empty parts leave no line"},
		{"parts only", Message{Role: RoleUser, Parts: []Part{{Type: PartImage}, txt("b"), txt("c")}}, "user: b\nc", "no newline before the first text"},
		{"reasoning", Message{Role: RoleAssistant, Content: "x", Parts: []Part{{Type: PartReasoning, Text: "secret"}}}, "assistant: x", "reasoning stays out"},
		{"calls", Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "f", Arguments: "{}"}, {ID: "2", Name: "g"}}}, "assistant: [called f({})] [called g()]", "calls separated by a space"},
		{"text and call", Message{Role: RoleAssistant, Parts: []Part{txt("t")}, ToolCalls: []ToolCall{{ID: "1", Name: "f"}}}, "assistant: t [called f()]", "a space after text"},
		{"tool", Message{Role: RoleTool, ToolCallID: "c1", Content: "out"}, "tool (c1): out", "tool results name their call"},
		{"tool without id", Message{Role: RoleTool, Content: "out"}, "tool (): out", "an empty id still has its brackets"},
		{"summary", Message{Role: RoleUser, Kind: KindSummary, Content: "s"}, "summary: s", "summaries are labelled"},
		{"empty role", Message{Content: "x"}, ": x", "an empty role is an empty piece"},
		{"empty", Message{Role: RoleUser, Parts: []Part{{Type: PartImage}}}, "", "no text, no calls: left out"},
		{"breadcrumb", Message{Role: RoleUser, Kind: KindBreadcrumb, Content: "b"}, "", "breadcrumbs are left out"},
	}
	for _, tc := range tests {
		if got := RenderTranscript([]Message{tc.m}, math.MaxInt, RenderOptions{}); got != tc.want {
			t.Errorf("%s: %q, want %q: %s", tc.name, got, tc.want, tc.reason)
		}
		// Cutting from the end at every cap yields suffixes of the whole
		// (a pinned summary is cut at its head instead).
		for n := 1; n < len(tc.want) && tc.m.Kind != KindSummary; n++ {
			if got := RenderTranscript([]Message{tc.m}, n, RenderOptions{Marker: "~"}); !strings.HasSuffix(tc.want, strings.TrimPrefix(got, "~\n")) {
				t.Errorf("%s at %d: %q is not a suffix of %q", tc.name, n, got, tc.want)
			}
		}
	}
}

// clusterPool holds grapheme clusters that stay separate clusters whatever
// follows or precedes them, so that a text built from them has known
// boundaries.
var clusterPool = []string{
	"a", "b", " ", "e\u0301", "a\u0301\u0302", "👨\u200d👩\u200d👧", "🇫🇷", "🇩🇪", "👍🏽", "❤\uFE0F",
	"\u1100\u1161\u11A8", "각", "\r\n", "क\u093F", "1\u20E3", "漢", "\n", "\t",
	"🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F",
}

// clusterOptions render cluster texts: content only, with a marker and a
// separator that no cluster contains.
var clusterOptions = RenderOptions{Format: contentOnly, Marker: "[cut]", Separator: "|"}

// clusterText joins clusters picked by data and returns the text with the
// byte offsets at which a cut may fall.
func clusterText(data []byte) (string, map[int]bool) {
	var b strings.Builder
	cuts := map[int]bool{0: true}
	for _, c := range data {
		b.WriteString(clusterPool[int(c)%len(clusterPool)])
		cuts[b.Len()] = true
	}
	return b.String(), cuts
}

// checkClusterCuts checks a RenderTranscript result for one message of
// cluster text (content-only format, pinned summary optional): the cap, and
// that every cut falls on a cluster boundary known by construction.
func checkClusterCuts(t *testing.T, summary, body string, sumCuts, bodyCuts map[int]bool, maxChars int, got string) {
	t.Helper()
	if n := utf8.RuneCountInString(got); n > max(maxChars, 0) {
		t.Fatalf("%d characters > %d: %q", n, maxChars, got)
	}
	// The options are Marker "[cut]" and Separator "|", neither of which
	// a cluster text contains.
	var head, tail string
	if before, after, marked := strings.Cut(got, "[cut]"); marked {
		head, tail = strings.TrimSuffix(before, "|"), strings.TrimPrefix(after, "|")
	} else if rest, ok := strings.CutPrefix(got, summary); ok && summary != "" {
		head, tail = summary, strings.TrimPrefix(rest, "|")
	} else {
		tail = got
	}
	if head != "" {
		if !strings.HasPrefix(summary, head) || !sumCuts[len(head)] {
			t.Fatalf("head %q is not a prefix of the summary ending on a cluster boundary", head)
		}
	}
	if tail != "" {
		if !strings.HasSuffix(body, tail) || !bodyCuts[len(body)-len(tail)] {
			t.Fatalf("tail %q is not a suffix of the body starting on a cluster boundary (got %q)", tail, got)
		}
	}
}

// TestRenderTranscriptClusterBoundaries cuts texts made of known clusters at
// every cap: each cut, at the head of a pinned summary or at the start of
// the newest text, falls between two clusters.
func TestRenderTranscriptClusterBoundaries(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 20 {
		sd, bd := make([]byte, 20), make([]byte, 30)
		for i := range sd {
			sd[i] = byte(r.IntN(256))
		}
		for i := range bd {
			bd[i] = byte(r.IntN(256))
		}
		summary, sumCuts := clusterText(sd)
		body, bodyCuts := clusterText(bd)
		for _, withSummary := range []bool{false, true} {
			var msgs []Message
			if withSummary {
				msgs = append(msgs, Message{Role: RoleUser, Kind: KindSummary, Content: summary})
			}
			msgs = append(msgs, Message{Role: RoleUser, Content: body})
			s := summary
			if !withSummary {
				s = ""
			}
			for n := 0; n <= utf8.RuneCountInString(summary+body)+2; n++ {
				got := RenderTranscript(msgs, n, clusterOptions)
				checkClusterCuts(t, s, body, sumCuts, bodyCuts, n, got)
			}
		}
	}
}

// TestRenderTranscriptCostFollowsOutput renders the end of a 16 MB message:
// the bytes allocated follow the output, not the input.
func TestRenderTranscriptCostFollowsOutput(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocations")
	}
	big := strings.Repeat("bbbb \u0301cccc ", 16<<20/13)
	tests := []struct {
		name   string
		msgs   []Message
		reason string
	}{
		{"huge message", []Message{{Role: RoleUser, Content: big}}, "the newest message is read from its end"},
		{"huge oldest", []Message{{Role: RoleUser, Content: big}, {Role: RoleAssistant, Content: strings.Repeat("ok ", 100)}}, "an older message past the cap is not read"},
		{"huge summary", []Message{{Role: RoleUser, Kind: KindSummary, Content: big}, {Role: RoleUser, Content: "latest"}}, "a pinned summary is read from its start, to the cap"},
		{"huge text part", []Message{{Role: RoleUser, Parts: []Part{{Type: PartText, Text: big}}}}, "text parts are not joined to the content"},
		{"huge tool call", []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: big}}}}, "tool-call arguments are not copied"},
		{"many tool calls", []Message{{Role: RoleAssistant, ToolCalls: make([]ToolCall, 1<<20)}}, "a message's tool calls are not listed to be rendered"},
		{"many parts", []Message{{Role: RoleUser, Content: "x", Parts: make([]Part, 1<<18)}}, "a message's parts are not listed to be rendered"},
	}
	for _, tc := range tests {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 10
		for range runs {
			if got := RenderTranscript(tc.msgs, 100, RenderOptions{}); utf8.RuneCountInString(got) > 100 {
				t.Fatalf("%s: over the cap", tc.name)
			}
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 8<<10 {
			t.Errorf("%s: %d bytes allocated per call for 100 characters of output: %s", tc.name, per, tc.reason)
		}
	}
}

func TestRenderTranscriptExtremeCaps(t *testing.T) {
	msgs := parse(t, "S:sys", "M:sum", "U:hello", "A:world")
	full := "system: sys\nsummary: sum\nuser: hello\nassistant: world"
	tests := []struct {
		max    int
		want   string
		reason string
	}{
		{math.MaxInt, full, "a huge cap keeps everything, without overflow"},
		{math.MinInt, "", "the most negative cap gives nothing"},
		{-1, "", "a negative cap gives nothing"},
		{len(full), full, "an exact fit is whole"},
		{len(full) - 1, "summary: sum\n[earlier conversation truncated]\nworld", "one character short cuts"},
	}
	for _, tc := range tests {
		if got := RenderTranscript(msgs, tc.max, RenderOptions{}); got != tc.want {
			t.Errorf("cap %d: %q, want %q: %s", tc.max, got, tc.want, tc.reason)
		}
	}
}

// FuzzRenderTranscriptClusters checks RenderTranscript on texts of known
// clusters mixed with arbitrary bytes: it never panics, never passes the
// cap, always writes valid UTF-8, never starts with a character that
// continues a cluster, cuts only between clusters, and is deterministic.
func FuzzRenderTranscriptClusters(f *testing.F) {
	f.Add([]byte{3, 4, 5, 6, 7, 8}, []byte{1, 2, 3}, "bbbb \u0301cccc", 7, uint8(3))
	f.Add([]byte{6, 6, 6, 7, 7}, []byte{}, "\xff\xfe\x00 \u200d", 2, uint8(1))
	f.Add([]byte{10, 11, 12, 13, 14, 18}, []byte{5, 5, 5, 5, 5, 5, 5}, "", 12, uint8(2))
	f.Fuzz(func(t *testing.T, bodyData, sumData []byte, raw string, maxChars int, n uint8) {
		body, bodyCuts := clusterText(bodyData)
		summary, sumCuts := clusterText(sumData)
		maxChars %= 400

		// Known clusters, content-only: cuts fall between clusters.
		var msgs []Message
		if summary != "" {
			msgs = append(msgs, Message{Role: RoleUser, Kind: KindSummary, Content: summary})
		}
		if body != "" {
			msgs = append(msgs, Message{Role: RoleUser, Content: body})
		}
		got := RenderTranscript(msgs, maxChars, clusterOptions)
		checkClusterCuts(t, summary, body, sumCuts, bodyCuts, maxChars, got)
		if again := RenderTranscript(msgs, maxChars, clusterOptions); again != got {
			t.Fatalf("not deterministic: %q then %q", got, again)
		}

		// Arbitrary bytes, default format, several messages.
		msgs = msgs[:0]
		if summary != "" {
			msgs = append(msgs, Message{Role: RoleUser, Kind: KindSummary, Content: raw + summary})
		}
		for i := range int(n % 8) {
			m := Message{Role: []Role{RoleUser, RoleAssistant, RoleTool}[i%3], Content: raw + body}
			switch i % 4 {
			case 1:
				m.ToolCalls = []ToolCall{{ID: "c", Name: raw, Arguments: body}, {ID: "d"}}
			case 2:
				m.Parts = []Part{{Type: PartImage}, {Type: PartText, Text: body + raw}, {Type: PartText}, {Type: PartText, Text: raw}}
			case 3:
				m.Content, m.ToolCallID = "", raw
			}
			msgs = append(msgs, m)
		}
		got = RenderTranscript(msgs, maxChars, RenderOptions{})
		if summary == "" {
			full := RenderTranscript(msgs, math.MaxInt, RenderOptions{})
			if !strings.HasSuffix(full, strings.TrimPrefix(got, DefaultRenderMarker+"\n")) {
				t.Fatalf("%q is not the end of the whole transcript %q", got, full)
			}
		}
		if c := utf8.RuneCountInString(got); c > max(maxChars, 0) {
			t.Fatalf("%d characters > %d", c, maxChars)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if r, _ := utf8.DecodeRuneInString(got); got != "" && isExtend(r) {
			t.Fatalf("starts inside a cluster: %q", got)
		}
		if strings.TrimSpace(strings.ReplaceAll(got, DefaultRenderMarker, "")) == "" && strings.Contains(got, DefaultRenderMarker) {
			t.Fatalf("marker without content: %q", got)
		}
		if again := RenderTranscript(msgs, maxChars, RenderOptions{}); again != got {
			t.Fatalf("not deterministic")
		}
	})
}

// BenchmarkRenderTranscriptHuge renders the last 100 characters of one
// 100 MB message: the cost must follow the output, not the input.
func BenchmarkRenderTranscriptHuge(b *testing.B) {
	msgs := []Message{{Role: RoleUser, Content: strings.Repeat("bbbb cccc ", 100<<20/10)}}
	b.SetBytes(int64(len(msgs[0].Content)))
	b.ReportAllocs()
	for b.Loop() {
		RenderTranscript(msgs, 100, RenderOptions{})
	}
}

// BenchmarkRenderTranscriptManyMessages renders the last 1000 characters of
// a history of 100,000 messages.
func BenchmarkRenderTranscriptManyMessages(b *testing.B) {
	msgs := make([]Message, 100_000)
	for i := range msgs {
		msgs[i] = Message{Role: []Role{RoleUser, RoleAssistant}[i%2], Content: "message text of moderate length, with café and 漢字"}
	}
	b.ReportAllocs()
	for b.Loop() {
		RenderTranscript(msgs, 1000, RenderOptions{})
	}
}
