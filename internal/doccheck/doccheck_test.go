package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSnippets compiles every Go snippet of README.md, docs/*.md and the
// module READMEs of adapters, frameworks and stores, each of those in its
// module (the package documentation says how). It compiles in each module a
// snippet needs, so it is a CI step of its own (.ci/run); elsewhere it
// runs when HISTRIM_DOCCHECK is set.
func TestSnippets(t *testing.T) {
	if os.Getenv("HISTRIM_DOCCHECK") == "" {
		t.Skip("set HISTRIM_DOCCHECK=1 to compile the docs' snippets (the CI step does)")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("the go command is not on PATH")
	}
	start := time.Now()
	rep, err := Check(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d snippets (%d declarations, %d statements, %d files), %d skipped, in %v",
		len(rep.Snippets), rep.Forms[Decls], rep.Forms[Body], rep.Forms[File], len(rep.Skipped), time.Since(start).Round(time.Millisecond))
	t.Logf("per context: %v", rep.Contexts)
	for _, s := range rep.Skipped {
		t.Logf("skipped %s: %s", s.Where(), s.Skip)
	}
	for _, p := range rep.Problems {
		t.Errorf("%s", p)
	}
}

// TestExtract: blocks, markers and what is not a snippet.
func TestExtract(t *testing.T) {
	tests := []struct {
		name, md string
		want     []Snippet // File is not compared
		err      string
	}{
		{"a go block, its first code line", "text\n```go\nx := 1\n```\n", []Snippet{{Line: 3, Code: "x := 1\n"}}, ""},
		{"other languages are not snippets", "```sh\ngo test\n```\n```json\n{}\n```\n", nil, ""},
		{"a go fence inside another block is text", "````md\n```go\nx\n```\n````\n", nil, ""},
		{"skip with a reason", "<!-- snippet: skip pseudo-code -->\n```go\nfoo(...)\n```\n",
			[]Snippet{{Line: 3, Code: "foo(...)\n", Skip: "pseudo-code"}}, ""},
		{"context", "<!-- snippet: context eino -->\n```go\nx\n```\n", []Snippet{{Line: 3, Code: "x\n", Context: "eino"}}, ""},
		{"skip without a reason", "<!-- snippet: skip -->\n```go\nx\n```\n", nil, "says why"},
		{"a marker away from its block", "<!-- snippet: skip why -->\n\ntext\n```go\nx\n```\n", nil, "right before"},
		{"a marker before another language", "<!-- snippet: skip why -->\n```sh\nx\n```\n", nil, "right before"},
		{"an unknown context", "<!-- snippet: context cobol -->\n```go\nx\n```\n", nil, "no snippet context"},
		{"an unknown marker", "<!-- snippet: ignore -->\n```go\nx\n```\n", nil, "unknown snippet marker"},
		{"an unclosed block", "```go\nx\n", nil, "not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "doc.md")
			if err := os.WriteFile(p, []byte(tt.md), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Extract(p)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d snippets, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				got[i].File = ""
				if got[i] != tt.want[i] {
					t.Errorf("snippet %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestGenerate: the form a snippet takes, the context it compiles in, and
// what is declared for it.
func TestGenerate(t *testing.T) {
	tests := []struct {
		name, code string
		form       Form
		ctx        string
		has        []string // in the generated files
		hasNot     []string
	}{
		{"statements on the core's names", "res, err := history.TrimToRecentTurns(msgs, budget)\n", Body, "core",
			[]string{`history "github.com/histrim/history"`, "var msgs []history.Message", "var budget int", "func _() error {"}, nil},
		{"a declared name is not the well-known one", "var cal history.Calibration\nfunc f() { cal.Reset() }\n", Decls, "core",
			nil, []string{"// one per model"}},
		{"the adapter chooses the context and msgs' type", "out, _, _ := hopenai.Trim(msgs, window)\n", Body, "openai",
			[]string{"var msgs []openai.ChatCompletionMessageParamUnion", `hopenai "github.com/histrim/history/adapters/openai"`}, nil},
		{"a snippet's own import chooses", "import hanthropic \"github.com/histrim/history/adapters/anthropicv2\"\n\nx, _, _ := hanthropic.Trim(nil, transcript, budget)\n", Body, "anthropicv2",
			[]string{"var transcript []anthropic.MessageParam", `anthropic "github.com/anthropics/anthropic-sdk-go/v2"`}, []string{`hanthropic "github.com/histrim/history/adapters/anthropic"`}},
		{"go-openai's package name", "import \"github.com/sashabaranov/go-openai\"\n\nvar r openai.ChatCompletionRequest\n", Decls, "core",
			nil, []string{`openai "`}},
		{"a complete file", "package main\n\nfunc main() {}\n", File, "core", []string{"package main"}, nil},
		{"a module README's snippet compiles in its module", "package main\n\nimport \"github.com/histrim/history\"\n\nvar _ history.Budget\n", File, "genkit",
			[]string{"package main"}, nil},
		{"a module README's statements get its module's names", "out, _, _ := hopenai.Trim(msgs, window)\n", Body, "eino",
			[]string{"var msgs []*schema.Message"}, []string{"var msgs []openai"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := "doc.md"
			switch tt.ctx {
			case "genkit":
				file = "frameworks/genkit/README.md"
			case "eino":
				file = "adapters/eino/README.md"
			}
			u, err := generate(Snippet{File: file, Line: 10, Code: tt.code}, "/abs/doc.md", "s01")
			if err != nil {
				t.Fatal(err)
			}
			all := u.files["snippet.go"] + u.files["env.go"]
			if u.form != tt.form || u.ctx.name != tt.ctx {
				t.Errorf("form %v, context %s; want %v, %s\n%s", u.form, u.ctx.name, tt.form, tt.ctx, all)
			}
			if !strings.Contains(u.files["snippet.go"], "//line /abs/doc.md:10:1\n") {
				t.Errorf("no line directive at the snippet's first line:\n%s", all)
			}
			for _, s := range tt.has {
				if !strings.Contains(all, s) {
					t.Errorf("no %q in\n%s", s, all)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(all, s) {
					t.Errorf("%q in\n%s", s, all)
				}
			}
		})
	}
}

// TestContexts: no context gives a name both to a package and to a
// well-known name, and every context's module exists.
func TestContexts(t *testing.T) {
	for i := range contexts {
		c := &contexts[i]
		pkgs := c.allPackages()
		for n := range c.allNames() {
			if _, ok := pkgs[n]; ok {
				t.Errorf("context %s: %s is a package and a well-known name", c.name, n)
			}
		}
		if _, err := os.Stat(filepath.Join("..", "..", c.module, "go.mod")); err != nil {
			t.Errorf("context %s: %v", c.name, err)
		}
	}
}

// TestCheckReports: Check reports what the compiler finds at the snippet's
// Markdown line, passes a fragment whose names the rest of the program
// would use, and leaves skipped snippets out (a module of its own, with
// the standard library only).
func TestCheckReports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	root := t.TempDir()
	readme := "# doc\n\n```go\nx := 1 // declared and not used: the elided rest uses it\nfmt.Println(\"ok\")\n```\n\n" +
		"```go\nfmt.Println(y)\n```\n\n" +
		"<!-- snippet: skip pseudo-code -->\n```go\nfoo(...)\n```\n\n" +
		"```go\nfunc f() int { return \"s\" }\n```\n"
	files := map[string]string{
		"go.mod":       "module example.com/doccheck\n\ngo 1.24\n",
		"README.md":    readme,
		"docs/none.md": "no snippets\n",
		// A module README's snippet is checked too (here the module is
		// the root's: the test's stores/redis has no go.mod).
		"stores/redis/README.md": "# store\n\n```go\nfmt.Println(z)\n```\n",
		"elsewhere/README.md":    "```go\nfmt.Println(w)\n```\n", // not a module README: not read
	}
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "-mod=mod")
	rep, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Snippets) != 5 || len(rep.Skipped) != 1 || rep.Forms[Body] != 3 || rep.Forms[Decls] != 1 || rep.Contexts["redis"] != 1 {
		t.Errorf("%d snippets, %d skipped, forms %v, contexts %v; want 5, 1, 3 statements and 1 declarations, 1 in redis's",
			len(rep.Snippets), len(rep.Skipped), rep.Forms, rep.Contexts)
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.Errors...)
	}
	want := []string{"README.md:9:13: undefined: y", "README.md:18:23: cannot use \"s\"", "stores/redis/README.md:4:13: undefined: z"}
	if len(got) != len(want) {
		t.Fatalf("problems %q, want %d starting %q", got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(root, "_doccheck*")); len(entries) > 0 {
		t.Errorf("Check left %v behind", entries)
	}
}
