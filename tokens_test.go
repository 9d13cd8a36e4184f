package history

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history/internal/race"
)

// sharedCorpus is the shared corpus of real transcripts, beside the
// repository root (CI clones the repository next to shared/).
const sharedCorpus = "../shared/corpus/real"

type refConv struct {
	file string
	msgs []Message
	ref  map[string][][2]int // encoding -> per message [content, tool calls]
}

// loadRefCorpus reads the corpus and its reference counts (under the race
// detector, the sessions race.CorpusFile keeps), or skips the test with
// the reason when they are absent.
func loadRefCorpus(tb testing.TB) []refConv {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(sharedCorpus, "token_counts.json"))
	if err != nil {
		tb.Skipf("shared corpus absent (%v): clone shared/ beside the repository root to run this test", err)
	}
	var rc struct {
		Conversations map[string]map[string]json.RawMessage `json:"conversations"`
	}
	if err := json.Unmarshal(raw, &rc); err != nil {
		tb.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(sharedCorpus, "*.jsonl"))
	slices.Sort(files)
	var convs []refConv
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && !race.CorpusFile(st.Size()) {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			tb.Fatal(err)
		}
		conv := refConv{file: filepath.Base(f), ref: map[string][][2]int{}}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m Message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			conv.msgs = append(conv.msgs, m)
		}
		fh.Close()
		for _, enc := range []string{"o200k_base", "cl100k_base"} {
			var e struct {
				PerMessage [][2]int `json:"per_message"`
			}
			if err := json.Unmarshal(rc.Conversations[conv.file][enc], &e); err != nil || len(e.PerMessage) != len(conv.msgs) {
				tb.Fatalf("%s %s: reference counts unusable (%v)", conv.file, enc, err)
			}
			conv.ref[enc] = e.PerMessage
		}
		convs = append(convs, conv)
	}
	if len(convs) == 0 {
		tb.Skipf("shared corpus absent: no %s/*.jsonl", sharedCorpus)
	}
	return convs
}

// heuristicError measures EstimateText on the text the reference counts
// cover (content, tool-call names and arguments; no framing).
type heuristicError struct {
	msgMean, msgWorst   float64 // relative, messages of at least 20 reference tokens
	convMean, convWorst float64 // relative, per conversation
	ratio               float64 // corpus total estimate / reference
	under10             int     // messages (>= 20 tokens) undercounted by more than 10%
	messages            int
}

func measureHeuristic(convs []refConv, enc string) heuristicError {
	var e heuristicError
	var est, ref float64
	for _, c := range convs {
		var ce, cr float64
		for i, m := range c.msgs {
			got := EstimateText(m.Content)
			for _, tc := range m.ToolCalls {
				got += EstimateText(tc.Name) + EstimateText(tc.Arguments)
			}
			want := c.ref[enc][i][0] + c.ref[enc][i][1]
			ce += float64(got)
			cr += float64(want)
			if want >= 20 {
				rel := math.Abs(float64(got-want)) / float64(want)
				e.msgMean += rel
				e.msgWorst = max(e.msgWorst, rel)
				if float64(got) < 0.9*float64(want) {
					e.under10++
				}
				e.messages++
			}
		}
		rel := math.Abs(ce-cr) / cr
		e.convMean += rel
		e.convWorst = max(e.convWorst, rel)
		est += ce
		ref += cr
	}
	e.msgMean /= float64(e.messages)
	e.convMean /= float64(len(convs))
	e.ratio = est / ref
	return e
}

// TestHeuristicCorpusError locks in the Heuristic's calibration: its error
// against the reference tokenizers on the shared corpus must stay within
// the bounds documented in docs/tokens.md, so a regression fails here.
func TestHeuristicCorpusError(t *testing.T) {
	convs := loadRefCorpus(t)
	for _, tc := range []struct {
		enc                string
		msgMean, convWorst float64
		ratioLo, ratioHi   float64
	}{
		// Calibrated against o200k_base: tight bounds.
		{"o200k_base", 0.08, 0.16, 0.98, 1.04},
		// cl100k_base differs from o200k by under 1% on this corpus.
		{"cl100k_base", 0.09, 0.17, 0.98, 1.04},
	} {
		e := measureHeuristic(convs, tc.enc)
		t.Logf("%s: per message (>= 20 tokens, n=%d) mean %.1f%% worst %.1f%%, %d undercounted by >10%%; per conversation mean %.1f%% worst %.1f%%; corpus estimate/reference %.3f",
			tc.enc, e.messages, 100*e.msgMean, 100*e.msgWorst, e.under10, 100*e.convMean, 100*e.convWorst, e.ratio)
		if e.msgMean > tc.msgMean || e.convWorst > tc.convWorst || e.ratio < tc.ratioLo || e.ratio > tc.ratioHi {
			t.Errorf("%s: heuristic error out of bounds: message mean %.3f (max %.2f), conversation worst %.3f (max %.2f), ratio %.3f (want %.2f..%.2f)",
				tc.enc, e.msgMean, tc.msgMean, e.convWorst, tc.convWorst, e.ratio, tc.ratioLo, tc.ratioHi)
		}
	}
}

func TestEstimateText(t *testing.T) {
	tests := []struct {
		text     string
		lo, hi   int
		reason   string
		exactish int // o200k reference count, for the record
	}{
		{"", 0, 0, "empty is free", 0},
		{"a", 1, 1, "any non-empty text is at least one token", 1},
		{strings.Repeat("漢字", 500), 900, 1100, "CJK: about one token per character (o200k 1000)", 1000},
		{strings.Repeat("こんにちは世界", 100), 600, 800, "kana and kanji per character", 0},
		{strings.Repeat("the quick brown fox jumps over the lazy dog ", 100), 800, 1100, "English prose: about 4.4 bytes per token (o200k 900)", 900},
		{strings.Repeat(`{"id": 12345, "ok": true}, `, 100), 1100, 1700, "JSON is denser than prose", 0},
		{strings.Repeat("x", 8) + "é", 3, 3, "ASCII fast path then a 2-byte rune", 0},
		{"\xff\xfe", 2, 2, "a run of invalid UTF-8: 1.75 for its first byte, 1/8 for the next", 1},
		{strings.Repeat("\x00", 100), 100, 100, "control bytes cost a token each", 50},
	}
	for _, tt := range tests {
		if got := EstimateText(tt.text); got < tt.lo || got > tt.hi {
			t.Errorf("EstimateText(%.30q) = %d, want %d..%d: %s", tt.text, got, tt.lo, tt.hi, tt.reason)
		}
	}
}

// TestEstimateTextSWAR checks the eight-bytes-at-a-time path against the
// byte-at-a-time rule for every ASCII byte value in every lane.
func TestEstimateTextSWAR(t *testing.T) {
	slow := func(s string) int {
		u := 0
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c|0x20 >= 'a' && c|0x20 <= 'z':
				u += letterRate
			case c == ' ':
				u += spaceRate
			case c <= 0x08, c >= 0x0e && c <= 0x1f, c == 0x7f:
				u += controlRate
			default:
				u += symbolRate
			}
		}
		return (u + rateScale - 1) / rateScale
	}
	buf := []byte("........")
	for c := range 128 {
		for lane := range 8 {
			for f := range buf {
				buf[f] = "aZ 9{@`["[(f+c)%8]
			}
			buf[lane] = byte(c)
			s := strings.Repeat(string(buf), 125) // 1000 bytes: units exact to the token
			if got, want := EstimateText(s), slow(s); got != want {
				t.Fatalf("byte %#x in lane %d: fast path %d, byte rule %d", c, lane, got, want)
			}
		}
	}
}

func TestHeuristicFraming(t *testing.T) {
	h := Heuristic().CountMessage
	tests := []struct {
		name   string
		m      Message
		want   int
		reason string
	}{
		{"empty", Message{Role: RoleUser}, 4, "3 per message + 1 for the role"},
		{"name", Message{Role: RoleUser, Name: "bob"}, 4 + 1 + EstimateText("bob"), "a name costs 1 + its text"},
		{"ids ignored", Message{Role: RoleTool, ToolCallID: "call_0123456789abcdef"}, 4, "ToolCallID is not sent as text"},
		{"tool call", Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_0123456789abcdef", Name: "read", Arguments: `{"p":1}`}}},
			4 + 3 + EstimateText("read") + EstimateText(`{"p":1}`), "3 + name + arguments per call"},
		{"unknown role", Message{Role: "developer"}, 3 + EstimateText("developer"), "unknown roles estimated as text"},
		{"image", Message{Role: RoleUser, Parts: []Part{{Type: PartImage, Width: 1024, Height: 1024}}}, 4 + 765, "tile rule"},
		{"known", Message{Role: RoleUser, Parts: []Part{{Type: PartFile, Tokens: 77, Size: 1 << 20}}}, 4 + 77, "known Tokens as given"},
		{"reasoning", Message{Role: RoleAssistant, Parts: []Part{{Type: PartReasoning, Text: "think think"}}}, 4 + EstimateText("think think"), "reasoning is text"},
	}
	for _, tt := range tests {
		if got := h(tt.m); got != tt.want {
			t.Errorf("%s: %d, want %d: %s", tt.name, got, tt.want, tt.reason)
		}
	}
}

func TestImageTokens(t *testing.T) {
	tests := []struct {
		w, h   int
		detail string
		want   int
		reason string
	}{
		{1024, 1024, "", 765, "768x768: 4 tiles"},
		{1024, 1024, "low", 85, "low detail is flat"},
		{1024, 1024, "LOW", 85, "detail is case-insensitive"},
		{2048, 4096, "high", 1105, "fit 2048 then shorter side 768: 768x1536, 6 tiles"},
		{4000, 3000, "auto", 765, "2048x1536 -> 1024x768: 4 tiles"},
		{512, 512, "", 255, "exactly one tile"},
		{513, 512, "", 425, "just over one tile wide"},
		{100, 100, "", 255, "small images cost one tile"},
		{3840, 2160, "", 1105, "4K screenshot: 1365x768, 6 tiles (not a flat 85)"},
		{0, 500, "", 765, "unknown width"},
		{-1, -1, "high", 765, "negative means unknown"},
		{10000, 1, "high", 765, "extreme aspect ratio: 2048x0.2 rounds up to one pixel, 4x1 tiles, never fewer than a 1x1 image"},
		{1, 10000, "high", 765, "the same standing up"},
		{1, 1, "high", 255, "the smallest image is one tile"},
		{math.MaxInt, 1, "", 765, "a huge width scales to 2048 without overflow"},
		{math.MaxInt, math.MaxInt, "", 765, "huge and square: 768x768"},
		{math.MaxInt, math.MaxInt / 3, "", 1445, "huge 3:1: 2048x683, 4x2 tiles"},
		{2048, 768, "", 1445, "the most tiles any image can need: 4x2"},
		{math.MinInt, 100, "", 765, "the most negative width means unknown"},
		{0, 0, "low", 85, "low detail is flat even when the size is unknown"},
		{100, 100, "medium", 255, "an unknown detail counts as high"},
	}
	for _, tt := range tests {
		if got := ImageTokens(tt.w, tt.h, tt.detail); got != tt.want {
			t.Errorf("ImageTokens(%d, %d, %q) = %d, want %d: %s", tt.w, tt.h, tt.detail, got, tt.want, tt.reason)
		}
	}
}

func TestHeuristicAllocs(t *testing.T) {
	m := Message{Role: "Developer", Content: "x", Name: "n", ToolCalls: []ToolCall{{Name: "f", Arguments: "{}"}},
		Parts: []Part{{Type: PartFile, Size: 100, MIMEType: "APPLICATION/JSON"}, {Type: PartFile, Size: 100, MIMEType: "Text/Plain"},
			{Type: PartImage, Width: 100, Height: 100, Detail: "LOW"}, {Type: PartText, Text: "t"}}}
	if a := testing.AllocsPerRun(100, func() { Heuristic().CountMessage(m) }); a != 0 {
		t.Errorf("Heuristic().CountMessage allocates %v times", a)
	}
}

func TestTextLike(t *testing.T) {
	tests := []struct {
		mime   string
		want   bool
		reason string
	}{
		{"text/plain", true, "text/*"},
		{"TEXT/HTML", true, "case is ignored"},
		{"application/JSON", true, "JSON in any case"},
		{"application/vnd.api+json", true, "a +json suffix"},
		{"application/x-python-code", true, "Python"},
		{"application/pdf", false, "binary"},
		{"text", false, "too short for text/"},
		{"", false, "unknown"},
		{"image/svg+xm", false, "a partial match is no match"},
	}
	for _, tc := range tests {
		if got := textLike(tc.mime); got != tc.want {
			t.Errorf("textLike(%q) = %v, want %v: %s", tc.mime, got, tc.want, tc.reason)
		}
	}
}

func TestEstimateTextAllocs(t *testing.T) {
	s := strings.Repeat("mixed ASCII, 漢字 and ✓ symbols ", 100)
	if a := testing.AllocsPerRun(100, func() { EstimateText(s) }); a != 0 {
		t.Errorf("EstimateText allocates %v times", a)
	}
}

// BenchmarkEstimateText measures the heuristic's throughput on the corpus.
func BenchmarkEstimateText(b *testing.B) {
	convs := loadRefCorpus(b)
	var texts []string
	size := 0
	for _, c := range convs {
		for _, m := range c.msgs {
			texts = append(texts, m.Content)
			size += len(m.Content)
			for _, tc := range m.ToolCalls {
				texts = append(texts, tc.Name, tc.Arguments)
				size += len(tc.Name) + len(tc.Arguments)
			}
		}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range texts {
			EstimateText(s)
		}
	}
}

// TestRareMask checks the SWAR control-byte masks against the byte rule
// for every ASCII byte in every lane.
func TestRareMask(t *testing.T) {
	for c := 0; c < 0x80; c++ {
		want := countControls(string([]byte{byte(c)})) == 1
		for lane := 0; lane < 8; lane++ {
			buf := []byte("abcdefgh")
			buf[lane] = byte(c)
			got := controlMask(word(string(buf), 0))&highs != 0
			if got != want {
				t.Fatalf("byte %#x in lane %d: control %v, want %v", c, lane, got, want)
			}
			// rareMask flags every control, and more (tabs, line ends).
			if want && rareMask(word(string(buf), 0))&highs == 0 {
				t.Fatalf("byte %#x in lane %d: a control rareMask misses", c, lane)
			}
			// countControls agrees on every position of a longer text.
			long := strings.Repeat("é", lane) + string(buf) + strings.Repeat("x", 9)
			if n := countControls(long); (n == 1) != want || n > 1 {
				t.Fatalf("byte %#x in lane %d: countControls %d", c, lane, n)
			}
		}
	}
}
