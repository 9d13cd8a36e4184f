package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGolden runs the command on the files in testdata and compares its
// output and exit status with testdata/golden/<name>.golden.
func TestGolden(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		stdin  string // file fed on stdin
		code   int
		reason string
	}{
		{"jsonl", []string{"-budget", "900", "testdata/chat.jsonl"}, "", 0, "drops the two oldest turns; nudge stays in the last turn"},
		{"jsonl-fits", []string{"-budget", "100000", "testdata/chat.jsonl"}, "", 0, "fits: nothing dropped, no event"},
		{"openai", []string{"-budget", "600", "testdata/openai.json"}, "", 0, "auto-detects OpenAI; sweeps an orphan result and strips an unanswered call"},
		{"anthropic-stdin", []string{"-budget", "300"}, "testdata/anthropic.json", 0, "reads stdin; auto-detects Anthropic; the image turn is dropped"},
		{"anthropic-forced", []string{"-budget", "1000", "-format", "anthropic", "-"}, "testdata/anthropic.json", 0, "explicit format, '-' for stdin; tool results split per block"},
		{"openai-tiktoken", []string{"-budget", "600", "-model", "gpt-4o", "testdata/openai.json"}, "", 0, "exact o200k counts"},
		{"over-budget", []string{"-budget", "20", "testdata/chat.jsonl"}, "", 3, "the latest turn alone does not fit: result printed, exit 3"},
		{"malformed", []string{"-budget", "100", "testdata/malformed.jsonl"}, "", 1, "a broken JSON line is an input error with its line number"},
		{"invalid-message", []string{"-budget", "100", "testdata/invalid.jsonl"}, "", 1, "a tool message without an id breaks the message model"},
		{"bad-role", []string{"-budget", "100", "testdata/badrole.json"}, "", 1, "legacy function role is not supported"},
		{"wrong-format", []string{"-budget", "100", "-format", "openai", "testdata/chat.jsonl"}, "", 1, "JSONL is not an OpenAI request"},
		{"missing-file", []string{"-budget", "100", "testdata/nope.jsonl"}, "", 1, "unreadable input"},
		{"no-budget", []string{"testdata/chat.jsonl"}, "", 2, "the budget is required"},
		{"bad-format", []string{"-budget", "10", "-format", "yaml", "testdata/chat.jsonl"}, "", 2, "unknown format"},
		{"two-files", []string{"-budget", "10", "a", "b"}, "", 2, "one input at most"},
		{"unknown-model", []string{"-budget", "10", "-model", "no-such-model", "testdata/chat.jsonl"}, "", 2, "-model must name a model tiktoken knows"},
		{"bad-flag", []string{"-bugdet", "10"}, "", 2, "misspelt flag"},
		{"ladder", []string{"-budget", "2000", "-elide", "-clear", "32", "-steptrim", "testdata/agent.jsonl"}, "", 0, "elides results and clears arguments in the kept turns, keeps the summary of a dropped turn, sweeps an orphan"},
		{"steps", []string{"-budget", "1000", "-elide", "-steptrim", "testdata/agent.jsonl"}, "", 0, "the latest turn alone is too large: its oldest steps go behind a step breadcrumb"},
		{"trigger-lowwater", []string{"-budget", "900", "-trigger", "0.9", "-lowwater", "0.5", "testdata/chat.jsonl"}, "", 0, "trims past 810 tokens, down to 450"},
		{"replay", []string{"-budget", "900", "-replay", "testdata/chat.jsonl"}, "", 0, "one request before every reply; two maintenance points"},
		{"replay-ladder", []string{"-budget", "2000", "-elide", "-clear", "32", "-steptrim", "-lowwater", "0.7", "-replay", "-prices", "openai", "testdata/agent.jsonl"}, "", 0, "the replay trims with the options of the trim, billed at OpenAI's prices"},
		{"bad-trigger", []string{"-budget", "10", "-trigger", "1.5", "testdata/chat.jsonl"}, "", 2, "the core rejects a trigger above 1; the flag is named"},
		{"bad-lowwater", []string{"-budget", "10", "-lowwater", "1", "testdata/chat.jsonl"}, "", 2, "the low-water mark must be below the budget"},
		{"bad-clear", []string{"-budget", "10", "-elide", "-clear", "-3", "testdata/chat.jsonl"}, "", 2, "a negative argument threshold"},
		{"clear-without-elide", []string{"-budget", "10", "-clear", "32", "testdata/chat.jsonl"}, "", 2, "arguments are cleared only with the results they produced"},
		{"prices-without-replay", []string{"-budget", "10", "-prices", "openai", "testdata/chat.jsonl"}, "", 2, "only the replay is billed"},
		{"unknown-prices", []string{"-budget", "10", "-replay", "-prices", "azure", "testdata/chat.jsonl"}, "", 2, "a preset the core does not have"},
		{"task", []string{"-budget", "1500", "-task", "testdata/task.jsonl"}, "", 0, "the goal-keeping preset: the task notification stays in the task's turn, the oldest step goes, the newest result is cut to a head and tail digest"},
		{"task-all-user-turns", []string{"-budget", "1500", "-task", "-userturns=false", "testdata/task.jsonl"}, "", 0, "every user message a turn: the notification is the latest turn, the task's work is dropped, only its pinned request stays"},
		{"task-with-elide", []string{"-budget", "1500", "-task", "-elide", "testdata/task.jsonl"}, "", 2, "-task sets the ladder itself"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdin bytes.Reader
			if c.stdin != "" {
				data, err := os.ReadFile(c.stdin)
				if err != nil {
					t.Fatal(err)
				}
				stdin.Reset(data)
			}
			var stdout, stderr bytes.Buffer
			code := run(c.args, &stdin, &stdout, &stderr)
			if code != c.code {
				t.Errorf("exit %d, want %d (%s)\nstderr: %s", code, c.code, c.reason, stderr.String())
			}
			got := "exit " + string(rune('0'+code)) + "\n-- stdout --\n" + stdout.String() + "-- stderr --\n" + stderr.String()
			golden := filepath.Join("testdata", "golden", c.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (%s); run go test -update and review the diff\n--- got ---\n%s", golden, c.reason, got)
			}
		})
	}
}

// TestJSON checks the -json output's fields against the trim.
func TestJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-budget", "600", "-json", "testdata/openai.json"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("-json output is not JSON: %v\n%s", err, stdout.String())
	}
	if r.Format != "openai" || r.Counter != "heuristic" || !r.Trimmed || r.DroppedTurns != 1 || r.OrphansRemoved != 2 || r.Budget != 600 {
		t.Errorf("report = %+v", r)
	}
	if r.Event == nil || r.Event.TokensAfter != r.TokensAfter || r.Event.DroppedTurns != 1 {
		t.Errorf("event = %+v, want the trim's event", r.Event)
	}
	idx := make([]int, len(r.Sent))
	sum := 0
	for i, m := range r.Sent {
		idx[i] = m.Index
		sum += m.Tokens
	}
	if !slices.Equal(idx, []int{0, -1, 3, 4, 5, 7, 8}) {
		t.Errorf("sent indices = %v, want the system, the breadcrumb and the last two turns without the orphan", idx)
	}
	if sum != r.TokensAfter {
		t.Errorf("sent tokens sum to %d, TokensAfter is %d", sum, r.TokensAfter)
	}
	if r.Sent[3].Stripped != 1 || r.Sent[3].ToolCalls != 1 {
		t.Errorf("assistant with an unanswered call = %+v", r.Sent[3])
	}
	turnTokens := 0
	for _, tr := range r.Turns {
		turnTokens += tr.Tokens
	}
	if len(r.Turns) != 4 || r.Turns[1].Status != "dropped" || r.Turns[3].Status != "kept" {
		t.Errorf("turns = %+v", r.Turns)
	}
	if turnTokens < r.TokensBefore {
		t.Errorf("per-turn tokens sum to %d, less than the %d before trimming", turnTokens, r.TokensBefore)
	}
}

// TestDetect covers format detection on its own.
func TestDetect(t *testing.T) {
	cases := []struct{ in, want, reason string }{
		{`{"role":"user","content":"hi"}` + "\n", formatJSONL, "a Message line has no messages key"},
		{`{"messages":[{"role":"user","content":"hi"}]}`, formatOpenAI, "plain text reads the same either way"},
		{`{"system":"s","messages":[]}`, formatAnthropic, "top-level system is Anthropic's"},
		{`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}]}`, formatAnthropic, "tool_use blocks"},
		{`{"messages":[]}` + "\n" + `{"messages":[]}`, formatJSONL, "several objects are lines"},
		{`not json`, formatJSONL, "undecodable input falls to JSONL, which reports the error"},
		{`{"messages": 5}`, formatOpenAI, "a request whose messages are not an array is still a request"},
	}
	for _, c := range cases {
		if got := detect([]byte(c.in)); got != c.want {
			t.Errorf("detect(%s) = %s, want %s (%s)", c.in, got, c.want, c.reason)
		}
	}
}

// TestBadMessagesField: a request whose "messages" is not an array is
// reported by the field's name, not read as JSONL and refused for an
// unknown role.
func TestBadMessagesField(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"messages": 5}`, `field "messages" must be an array of messages, not a number`},
		{`{"model":"gpt-4o","messages":{"role":"user"}}`, `field "messages" must be an array of messages, not an object`},
		{`{"system":"s","messages":"hi"}`, `anthropic: field "messages" must be an array of messages, not a string`},
		{`{"messages": null}`, `field "messages" must be an array of messages, not null`},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"-budget", "100"}, strings.NewReader(c.in), &stdout, &stderr)
		if code != exitInput || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", c.in, code, stderr.String(), exitInput, c.want)
		}
	}
}
