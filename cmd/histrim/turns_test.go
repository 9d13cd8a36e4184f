package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
)

var turnRowRE = regexp.MustCompile(`(?m)^\s+turn \d+\s+messages\s+\S+\s+\d+ tokens\s+(kept|dropped)$`)

// TestTurnsAgree: the turn table, the JSON's turns, the HTML report's bars
// and its legend say what the event says: as many turns dropped and kept,
// and a message sent out of a dropped turn (WithTask's goal, a summary)
// drawn pinned. With -task the goal is its turn's opening: the turn was
// read as kept because its opening was sent, so the event said 3 turns
// kept and everything else 4, and the legend counted 0 pinned.
func TestTurnsAgree(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		wantPinned int // messages drawn pinned in the legend, besides the prefix
	}{
		{"-task: the goal's turn is dropped, its opening lifted", []string{"-budget", "3000", "-task", "testdata/agent.jsonl"}, 1},
		{"-task, every user message a turn", []string{"-budget", "1500", "-task", "-userturns=false", "testdata/task.jsonl"}, 1},
		{"a summary moved out of a dropped turn (drawn as a summary)", []string{"-budget", "2000", "-elide", "-steptrim", "testdata/agent.jsonl"}, 0},
		{"no pins", []string{"-budget", "600", "testdata/openai.json"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "report.html")
			var text, js, stderr bytes.Buffer
			if code := run(tc.args, strings.NewReader(""), &text, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if code := run(append([]string{"-json", "-html", page}, tc.args...), strings.NewReader(""), &js, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var r report
			if err := json.Unmarshal(js.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if r.Event == nil || r.Event.DroppedTurns != r.DroppedTurns || r.Event.KeptTurns != r.KeptTurns {
				t.Fatalf("event %+v, report %d dropped and %d kept", r.Event, r.DroppedTurns, r.KeptTurns)
			}
			want := fmt.Sprintf("%d dropped, %d kept", r.DroppedTurns, r.KeptTurns)
			count := func(statuses []string) string {
				d, k := 0, 0
				for _, s := range statuses {
					switch s {
					case "dropped":
						d++
					case "kept":
						k++
					}
				}
				return fmt.Sprintf("%d dropped, %d kept", d, k)
			}
			var jsonTurns []string
			for _, tr := range r.Turns[1:] { // after the prefix
				jsonTurns = append(jsonTurns, tr.Status)
			}
			if got := count(jsonTurns); got != want {
				t.Errorf("JSON turns: %s; the event: %s", got, want)
			}
			var textTurns []string
			for _, m := range turnRowRE.FindAllStringSubmatch(text.String(), -1) {
				textTurns = append(textTurns, m[1])
			}
			if got := count(textTurns); got != want {
				t.Errorf("turn table: %s; the event: %s\n%s", got, want, text.String())
			}
			html, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			for _, what := range []struct{ name, re string }{
				{"HTML bars", `<g class="bar" data-turn="[1-9]\d*" data-fate="(\w+)"`},
				{"HTML turn table", `<tr data-turn="[1-9]\d*" data-fate="(\w+)"`},
			} {
				var fates []string
				for _, m := range regexp.MustCompile(what.re).FindAllSubmatch(html, -1) {
					fates = append(fates, string(m[1]))
				}
				if got := count(fates); got != want {
					t.Errorf("%s: %s; the event: %s", what.name, got, want)
				}
			}
			m := regexp.MustCompile(`data-fate="pinned" data-count="(\d+)"`).FindSubmatch(html)
			if m == nil {
				t.Fatal("no pinned row in the legend")
			}
			pinned, _ := strconv.Atoi(string(m[1]))
			prefix := r.Turns[0].End - r.Turns[0].Start
			if pinned-prefix != tc.wantPinned {
				t.Errorf("the legend counts %d pinned, the prefix %d: want %d lifted", pinned, prefix, tc.wantPinned)
			}
		})
	}
}

// TestHTMLNamesBaseName: the report names its input by its base name, not
// the path it was given, which would carry the directories of the machine
// it was made on into a file meant to be shared.
func TestHTMLNamesBaseName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home", "someone", "private")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("testdata/chat.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	page := renderCase(t, []string{"-budget", "900", in}, 0)
	if bytes.Contains(page, []byte("someone")) || bytes.Contains(page, []byte(dir)) {
		t.Error("the report holds the input's directories")
	}
	if !bytes.Contains(page, []byte(`<span class="file">session.jsonl</span>`)) {
		t.Error("the report does not name its input session.jsonl")
	}
}

// TestTokensBeforeNotCounted: a TokensBefore of -1 (a trim that did not
// count what it dropped, the library's default) is shown as "not counted"
// in the text report and the HTML's figures, not as -1.
func TestTokensBeforeNotCounted(t *testing.T) {
	r := &report{Trimmed: true, TokensBefore: -1, TokensAfter: 500, Budget: 600}
	var text bytes.Buffer
	r.write(&text)
	if !strings.Contains(text.String(), "tokens:  not counted before, 500 after") {
		t.Errorf("text report:\n%s", text.String())
	}
	e := &history.Event{Type: history.EventType, Reason: history.ReasonBudget, TokensBefore: -1, TokensAfter: 500}
	for name, ps := range map[string][]pair{"figures": trimNumbers(r), "event": eventPairs(e)} {
		for _, p := range ps {
			if p.Key == "tokens_before" && p.Value != "not counted" {
				t.Errorf("%s: tokens before %q", name, p.Value)
			}
		}
	}
}
