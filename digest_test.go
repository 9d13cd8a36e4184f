package history

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listing returns n lines of a line-numbered file listing, with a
// definition at line def and an error report at line bad (0: none).
func listing(n, def, bad int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("  " + strconv.Itoa(i) + "→")
		switch i {
		case def:
			b.WriteString("func parseConfigFile(path string) error {")
		case bad:
			b.WriteString("panic: runtime error: index out of range")
		default:
			b.WriteString("    x = x + 1 // plain line of code with nothing to find")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func textCost(s string) int { return EstimateText(s) }

func TestDigest(t *testing.T) {
	text := listing(200, 120, 150)
	d := digest(text, "/repo/config.go", 120, digestHeadTail, textCost, nil)
	require.NotEmpty(t, d)
	assert.LessOrEqual(t, textCost(d), 120, "the digest fits its size")
	assert.True(t, strings.HasPrefix(d, "excerpt of /repo/config.go:\n"), "the call's target comes first: %q", d)
	assert.Contains(t, d, "1→", "the head")
	assert.Contains(t, d, "200→", "the tail")
	assert.Contains(t, d, "func parseConfigFile(path string) error {", "a definition")
	assert.Contains(t, d, "panic: runtime error", "an error report")
	assert.Contains(t, d, " lines]", "the gaps are marked")
	assert.Equal(t, d, digest(text, "/repo/config.go", 120, digestHeadTail, textCost, nil), "the same input gives the same digest")

	// Gaps count the lines left out: every line is shown or counted once.
	shown, gaps := 0, 0
	for _, l := range strings.Split(d, "\n")[1:] {
		if strings.HasPrefix(l, "[... ") {
			n, err := strconv.Atoi(strings.Fields(l)[1])
			require.NoError(t, err)
			gaps += n
		} else {
			shown++
		}
	}
	assert.Equal(t, 200, shown+gaps, "lines shown plus lines left out")

	// A measure that counts more than the estimate: the digest shrinks to fit it.
	double := func(s string) int { return 2 * EstimateText(s) }
	d2 := digest(text, "", 120, digestHeadTail, double, nil)
	assert.LessOrEqual(t, double(d2), 120)
	assert.True(t, strings.HasPrefix(d2, "excerpt:"))

	assert.Empty(t, digest(text, "x", 0, digestHeadTail, textCost, nil), "size 0: no digest")
	assert.Empty(t, digest("", "", 50, digestHeadTail, textCost, nil), "nothing to show")
}

func TestDigestLongLine(t *testing.T) {
	// Minified JSON on one line: shown in pieces, the ids in it found.
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range 80 {
		b.WriteString(`{"name":"item","value":` + strconv.Itoa(i) + `},`)
	}
	b.WriteString(`{"reservation_id":"ZFA04Y"}]}`)
	d := digest(b.String(), "", 150, digestHeadTail, textCost, nil)
	assert.LessOrEqual(t, textCost(d), 150)
	assert.Contains(t, d, "ZFA04Y", "an id deep in a long line")
	assert.Contains(t, d, `{"items":[`, "the head of the line")
	assert.Contains(t, d, " … ", "pieces of one line left apart are joined by an ellipsis")
	for _, l := range strings.Split(d, "\n") {
		assert.LessOrEqual(t, len(l), 3*maxItem, "no line is shown whole")
	}
}

func TestCallTarget(t *testing.T) {
	tests := []struct {
		args, want, reason string
	}{
		{`{"file_path": "/a/b.go", "offset": 3}`, "/a/b.go", "a path"},
		{`{"command": "go test ./...", "description": "x"}`, "go test ./...", "a command"},
		{`{"path":"C:\\dir\\f.txt"}`, `C:\dir\f.txt`, "escapes are read"},
		{`{"query": "x", "path": "/p"}`, "/p", "paths before other targets"},
		{`{"n": 3}`, "", "no target"},
		{`not json`, "", "not JSON"},
		{`{"path": 3}`, "", "not a string"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, callTarget(tc.args), tc.reason)
	}
}

func TestReadsAndWrites(t *testing.T) {
	assert.True(t, readsFile("Read", `{"file_path":"x"}`))
	assert.True(t, readsFile("read_file", `{"path":"x"}`))
	assert.True(t, readsFile("str_replace_editor", `{"command":"view","path":"x"}`))
	assert.False(t, readsFile("str_replace_editor", `{"command":"str_replace","path":"x"}`))
	assert.False(t, readsFile("Locate", `{"path":"x"}`), "words, not substrings")
	assert.True(t, writesFile("MultiEdit", `{}`))
	assert.True(t, writesFile("str_replace_editor", `{"command":"create"}`))
	assert.True(t, rewritesFile("Write", `{}`))
	assert.False(t, rewritesFile("Edit", `{}`), "an edit changes part of a file")
	assert.True(t, readsPart(`{"file_path":"x","offset":10,"limit":20}`))
	assert.False(t, readsPart(`{"file_path":"x"}`))
}

// bigResult is a tool result of about n tokens of listing, with a
// definition that a digest keeps.
func bigResult(id string, lines int) Message {
	return Message{Role: RoleTool, ToolCallID: id, Content: listing(lines, lines/2, 0)}
}

func readCall(id, path string) Message {
	return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "Read", Arguments: `{"file_path":"` + path + `"}`}}}
}

func TestElideWithDigest(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Content: "go"},
		readCall("a", "/repo/a.go"), bigResult("a", 150),
		readCall("b", "/repo/b.go"), bigResult("b", 150),
	}
	orig := clone(msgs)
	res, err := ElideToolResults(msgs, ElideOptions{KeepRecent: 1, Digest: 80})
	require.NoError(t, err)
	assert.Equal(t, orig, msgs, "input untouched")
	require.Equal(t, 1, res.Elided)
	e := res.Messages[2]
	assert.Equal(t, KindElided, e.Kind)
	head, body, ok := strings.Cut(e.Content, "\n")
	require.True(t, ok)
	assert.Equal(t, defaultPlaceholder("Read", Heuristic().CountMessage(msgs[2])), head, "the placeholder, then the digest")
	assert.True(t, strings.HasPrefix(body, "excerpt of /repo/a.go:"))
	assert.Contains(t, body, "func parseConfigFile")
	assert.LessOrEqual(t, Heuristic().CountMessage(e)-Heuristic().CountMessage(elided(msgs[2], head)), 80, "the digest fits Digest")
	assert.Equal(t, Estimate(msgs, nil)-Estimate(res.Messages, nil), res.TokensSaved, "TokensSaved is exact")

	again, err := ElideToolResults(res.Messages, ElideOptions{KeepRecent: 1, Digest: 80})
	require.NoError(t, err)
	assert.Equal(t, 0, again.Elided, "idempotent")

	// A ToolPolicy's Digest replaces ElideOptions.Digest; negative: none.
	res2, err := ElideToolResults(msgs, ElideOptions{KeepRecent: 1, Digest: 80, Tools: []ToolPolicy{{Name: "Read", Digest: -1}}})
	require.NoError(t, err)
	assert.NotContains(t, res2.Messages[2].Content, "\n", "no digest for this tool")
	// Keep: never elided.
	res3, err := ElideToolResults(msgs, ElideOptions{KeepRecent: 1, Tools: []ToolPolicy{{Name: "Read", Keep: true}}})
	require.NoError(t, err)
	assert.Equal(t, 0, res3.Elided)
}

func TestTrimWithDigest(t *testing.T) {
	msgs := []Message{{Role: RoleUser, Content: "go"}}
	for i := range 6 {
		id := "c" + strconv.Itoa(i)
		msgs = append(msgs, readCall(id, "/repo/f"+strconv.Itoa(i)+".go"), bigResult(id, 100))
	}
	total := Estimate(msgs, nil)
	for _, budget := range []int{total / 2, total / 3, total / 5} {
		opts := []Option{WithElision(ElideOptions{KeepRecent: 1, Digest: 60})}
		res, err := TrimToRecentTurns(msgs, budget, opts...)
		require.NoError(t, err, "budget %d", budget)
		assert.LessOrEqual(t, res.TokensAfter, budget)
		assert.Equal(t, Estimate(res.Messages, nil), res.TokensAfter, "TokensAfter is exact")
		digests := 0
		for _, m := range res.Messages {
			if m.Kind == KindElided && strings.Contains(m.Content, "\nexcerpt of ") {
				digests++
			}
		}
		assert.Positive(t, digests, "budget %d: elided results keep digests", budget)
		re, err := TrimToRecentTurns(res.Messages, budget, opts...)
		require.NoError(t, err)
		assert.Equal(t, res.Messages, re.Messages, "trimming the result again changes nothing")
	}
}

func TestSupersededFirst(t *testing.T) {
	call := func(id, name, args string) Message {
		return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: name, Arguments: args}}}
	}
	tests := []struct {
		name     string
		msgs     []Message
		want     string // the ToolCallID of the result elided first
		notFirst string
	}{
		{"a read of a file read again whole", []Message{
			{Role: RoleUser, Content: "go"},
			call("q", "Read", `{"file_path":"/q"}`), bigResult("q", 100),
			call("p", "Read", `{"file_path":"/p"}`), bigResult("p", 100),
			call("p2", "Read", `{"file_path":"/p"}`), bigResult("p2", 100),
			call("z", "Read", `{"file_path":"/z"}`), bigResult("z", 100),
		}, "p", ""},
		{"a read of part of a file supersedes nothing else", []Message{
			{Role: RoleUser, Content: "go"},
			call("q", "Read", `{"file_path":"/q"}`), bigResult("q", 100),
			call("p", "Read", `{"file_path":"/p"}`), bigResult("p", 100),
			call("p2", "Read", `{"file_path":"/p","offset":10,"limit":5}`), bigResult("p2", 100),
			call("z", "Read", `{"file_path":"/z"}`), bigResult("z", 100),
		}, "q", ""},
		{"a write's result shows what the model wrote", []Message{
			{Role: RoleUser, Content: "go"},
			call("q", "Read", `{"file_path":"/q"}`), bigResult("q", 100),
			call("w", "Write", `{"file_path":"/w","content":"x"}`), bigResult("w", 100),
			call("z", "Read", `{"file_path":"/z"}`), bigResult("z", 100),
		}, "w", ""},
		{"the same command run again", []Message{
			{Role: RoleUser, Content: "go"},
			call("q", "Read", `{"file_path":"/q"}`), bigResult("q", 100),
			call("t", "Bash", `{"command":"go test ./..."}`), bigResult("t", 100),
			call("t2", "Bash", `{"command":"go test ./..."}`), bigResult("t2", 100),
		}, "t", ""},
	}
	for _, tc := range tests {
		// One result's worth over the budget: exactly one is elided.
		budget := Estimate(tc.msgs, nil) - 300
		res, err := TrimToRecentTurns(tc.msgs, budget, WithElision(ElideOptions{KeepRecent: 1}))
		require.NoError(t, err, tc.name)
		require.Equal(t, 1, res.ElidedResults, tc.name)
		for _, m := range res.Messages {
			if m.Kind == KindElided {
				assert.Equal(t, tc.want, m.ToolCallID, tc.name)
			}
		}
	}
}

func TestToolPolicyFirst(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Content: "go"},
		readCall("r", "/r"), bigResult("r", 100),
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "g", Name: "Grep", Arguments: `{"pattern":"x"}`}}}, bigResult("g", 100),
		readCall("z", "/z"), bigResult("z", 100),
	}
	budget := Estimate(msgs, nil) - 300
	res, err := TrimToRecentTurns(msgs, budget, WithElision(ElideOptions{KeepRecent: 1, Tools: []ToolPolicy{{Name: "Grep", First: true}}}))
	require.NoError(t, err)
	require.Equal(t, 1, res.ElidedResults)
	assert.Equal(t, KindElided, res.Messages[4].Kind, "the Grep result goes before the older Read")
}
