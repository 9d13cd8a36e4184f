package adaptertest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/corpusfile"
)

// Conversation is one transcript of the shared corpus of real agent
// sessions (../shared/corpus/real, beside the repository root), as
// history messages.
type Conversation struct {
	// Name is the file name without the .jsonl extension.
	Name string
	// Index is the conversation's place in the whole corpus, its files
	// sorted by name, from 0: under the race detector, where Corpus
	// reads only some of them, a conversation keeps the index it has in
	// the plain run, so that what a test derives from it stays the same.
	Index int
	// Messages are the transcript's messages with broken tool pairs swept
	// (19 transcripts end with a call that never got a result) and empty
	// assistant messages removed.
	Messages []history.Message
}

// Corpus reads every conversation of the shared corpus (under the race
// detector, those race.CorpusFile keeps). root is the path
// from the test's package directory to the repository root (for example
// "../.."). A missing corpus fails the test: it is part of the project's
// checkout, and a test that silently skipped it would prove nothing.
func Corpus(t testing.TB, root string) []Conversation {
	t.Helper()
	dir := filepath.Join(root, "..", "shared", "corpus", "real")
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus in %s (err %v): the tests need ../shared beside the repository", dir, err)
	}
	sort.Strings(paths)
	convs := make([]Conversation, 0, len(paths))
	for k, p := range paths {
		if st, err := os.Stat(p); err == nil && !race.CorpusFile(st.Size()) {
			continue
		}
		msgs, err := corpusfile.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		convs = append(convs, Conversation{Name: strings.TrimSuffix(filepath.Base(p), ".jsonl"), Index: k, Messages: corpusfile.Clean(msgs)})
	}
	return convs
}

// CorpusBudgets returns the budgets a corpus test runs a conversation of
// total tokens at: 1%, 2%, 5%, 10%, 20%, 35%, 50%, 75% and 100% of it (at
// least 1 token); 2%, 10%, 35% and 75% under the race detector.
func CorpusBudgets(total int) []int {
	pcts := []int{1, 2, 5, 10, 20, 35, 50, 75, 100}
	if race.Enabled {
		pcts = []int{2, 10, 35, 75} // the plain run covers all; see Budgets
	}
	out := make([]int, len(pcts))
	for i, p := range pcts {
		out[i] = max(1, total/100*p+total%100*p/100)
	}
	return out
}

// OptionSet is a named set of trim options.
type OptionSet struct {
	Name string
	Opts []history.Option
}

// LadderSets returns the rungs of the degradation ladder as the corpus and
// replay tests trim with them: "plain", "elision", "steps" and "both"
// (default ElideOptions), and with clearing also "clear": both, clearing
// the arguments of elided results' calls from 64 tokens (the threshold
// bench/cachesim measures).
func LadderSets(clearing bool) []OptionSet {
	elide := history.WithElision(history.ElideOptions{})
	sets := []OptionSet{
		{"plain", nil},
		{"elision", []history.Option{elide}},
		{"steps", []history.Option{history.WithStepTrim()}},
		{"both", []history.Option{elide, history.WithStepTrim()}},
	}
	if clearing {
		sets = append(sets, OptionSet{"clear", []history.Option{history.WithElision(history.ElideOptions{ClearArguments: 64}), history.WithStepTrim()}})
	}
	return sets
}
