package tiktoken

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/corpusfile"
)

// corpusDir is the shared corpus of real transcripts, beside the repository
// root (CI clones the repository next to shared/).
const corpusDir = "../../shared/corpus/real"

type corpusConv struct {
	file string
	msgs []history.Message
}

// referenceCounts is the subset of token_counts.json the tests use.
type referenceCounts struct {
	Conversations map[string]map[string]json.RawMessage `json:"conversations"`
}

// loadCorpus reads every conversation of the shared corpus, in file name
// order, or skips the test with the reason when the corpus is absent.
func loadCorpus(tb testing.TB) []corpusConv {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Skipf("shared corpus absent: no %s/*.jsonl (clone the shared/ directory beside the repository root to run this test)", corpusDir)
	}
	slices.Sort(files)
	convs := make([]corpusConv, 0, len(files))
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && !race.CorpusFile(st.Size()) {
			continue
		}
		msgs, err := corpusfile.Read(f)
		if err != nil {
			tb.Fatal(err)
		}
		convs = append(convs, corpusConv{file: filepath.Base(f), msgs: msgs})
	}
	return convs
}

// loadReference returns, per file and encoding, the reference
// [content_tokens, tool_call_tokens] of every message.
func loadReference(tb testing.TB) map[string]map[string][][2]int {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(corpusDir, "token_counts.json"))
	if err != nil {
		tb.Skipf("shared corpus reference counts absent: %v", err)
	}
	var rc referenceCounts
	if err := json.Unmarshal(raw, &rc); err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]map[string][][2]int, len(rc.Conversations))
	for file, fields := range rc.Conversations {
		out[file] = map[string][][2]int{}
		for _, enc := range []string{Cl100kBase, O200kBase} {
			var e struct {
				PerMessage [][2]int `json:"per_message"`
			}
			if err := json.Unmarshal(fields[enc], &e); err != nil {
				tb.Fatalf("%s %s: %v", file, enc, err)
			}
			out[file][enc] = e.PerMessage
		}
	}
	return out
}

// corpusTexts returns every text field the reference counts cover.
func corpusTexts(convs []corpusConv) []string {
	var texts []string
	for _, c := range convs {
		for _, m := range c.msgs {
			texts = append(texts, m.Content)
			for _, tc := range m.ToolCalls {
				texts = append(texts, tc.Name, tc.Arguments)
			}
		}
	}
	return texts
}

// TestCorpusAccuracy checks that the per-message text counts of both
// encodings equal the reference tiktoken counts on every message of every
// corpus conversation.
func TestCorpusAccuracy(t *testing.T) {
	convs := loadCorpus(t)
	ref := loadReference(t)
	for _, enc := range []string{Cl100kBase, O200kBase} {
		c, err := New(enc)
		if err != nil {
			t.Fatal(err)
		}
		mismatches, messages, total := 0, 0, 0
		for _, conv := range convs {
			want, ok := ref[conv.file][enc]
			if !ok {
				t.Errorf("%s: no reference counts for %s", enc, conv.file)
				continue
			}
			if len(want) != len(conv.msgs) {
				t.Errorf("%s %s: %d messages, reference has %d", enc, conv.file, len(conv.msgs), len(want))
				continue
			}
			for i, m := range conv.msgs {
				got := [2]int{c.CountText(m.Content), 0}
				for _, tc := range m.ToolCalls {
					got[1] += c.CountText(tc.Name) + c.CountText(tc.Arguments)
				}
				messages++
				total += got[0] + got[1]
				if got != want[i] {
					mismatches++
					if mismatches <= 10 {
						t.Errorf("%s %s message %d: got [content, tool calls] %v, reference %v (content %.80q)",
							enc, conv.file, i, got, want[i], m.Content)
					}
				}
			}
		}
		if mismatches > 0 {
			t.Errorf("%s: %d mismatches in %d messages", enc, mismatches, messages)
		}
		t.Logf("%s: %d conversations, %d messages, %d tokens, %d mismatches", enc, len(convs), messages, total, mismatches)
	}
}

// TestSpecialTokensAsText checks that special-token strings count as the
// ordinary text they are.
func TestSpecialTokensAsText(t *testing.T) {
	for _, enc := range []string{Cl100kBase, O200kBase} {
		c := mustNew(t, enc)
		for _, s := range []string{"<|endoftext|>", "<|endofprompt|>", "a <|fim_prefix|> b"} {
			if got := c.CountText(s); got <= 1 {
				t.Errorf("%s: CountText(%q) = %d, want the ordinary-text count (> 1)", enc, s, got)
			}
		}
		if strings.Contains(c.Encoding(), "base") != true {
			t.Errorf("Encoding() = %q", c.Encoding())
		}
	}
}
