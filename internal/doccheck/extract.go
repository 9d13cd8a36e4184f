// Package doccheck compiles the Go snippets of the repository's Markdown
// documents (README.md, docs/*.md and the READMEs of the adapter,
// framework and store modules), so that a snippet a reader copies
// compiles against the code it documents.
//
// A snippet is a fenced block opened by ```go. It is one of:
//   - a complete file: it has a package clause, and compiles as written;
//   - declarations (funcs, types, vars, consts), after optional imports:
//     they become a file of a package of their own;
//   - statements, after optional imports: they become the body of a
//     function returning error (so `return err` reads as in a handler).
//
// What a snippet does not declare or import is looked up in its context
// (contexts.go): the module it compiles in, the package names the docs use
// (history, hopenai, anthropic, ...) and the well-known names the prose
// around the snippets defines (msgs, ctx, client, params, window, ...),
// each with one type per context. A name that is neither is an error, as
// it would be for the reader.
//
// Since a snippet shows part of a program, names it declares and does not
// use ("declared and not used") and imports it names without using
// ("imported and not used") are not errors: the elided rest of the
// program would use them. Everything else the compiler reports is.
//
// A snippet that is deliberately not Go (pseudo-code) is marked on the line
// before its fence, with a reason:
//
//	<!-- snippet: skip the reason -->
//
// and a snippet whose context cannot be told from the packages it names is
// given one with
//
//	<!-- snippet: context NAME -->
package doccheck

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Snippet is one ```go block of a Markdown file.
type Snippet struct {
	File    string // the Markdown file's path
	Line    int    // the line of the snippet's first line of code (1-based)
	Code    string // the block's text, without the fences
	Skip    string // the reason given by a skip marker, or ""
	Context string // the context named by a context marker, or ""
}

// Where is the snippet's place, as file:line of its opening fence.
func (s Snippet) Where() string { return fmt.Sprintf("%s:%d", s.File, s.Line-1) }

const markerPrefix = "<!-- snippet:"

// Extract returns the ```go blocks of the Markdown file at path, in order.
// It reports an unterminated block, and a snippet marker that does not
// stand right before a ```go fence or that it does not understand.
func Extract(path string) ([]Snippet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out      []Snippet
		cur      *Snippet
		code     strings.Builder
		fence    string // the open fence's backticks, when inside any block
		marker   string // a marker on the previous line
		markerAt int
		line     int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line++
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`") == "" {
				if cur != nil {
					cur.Code = code.String()
					out = append(out, *cur)
					cur = nil
				}
				fence = ""
				continue
			}
			if cur != nil {
				code.WriteString(text)
				code.WriteByte('\n')
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			lang := strings.TrimSpace(trimmed[len(fence):])
			if lang == "go" {
				cur = &Snippet{File: path, Line: line + 1}
				code.Reset()
				if marker != "" {
					if err := applyMarker(cur, marker); err != nil {
						return nil, fmt.Errorf("%s:%d: %v", path, markerAt, err)
					}
				}
			} else if marker != "" {
				return nil, fmt.Errorf("%s:%d: a snippet marker must stand right before a ```go fence", path, markerAt)
			}
			marker = ""
			continue
		}
		if marker != "" && trimmed != "" {
			return nil, fmt.Errorf("%s:%d: a snippet marker must stand right before a ```go fence", path, markerAt)
		}
		if strings.HasPrefix(trimmed, markerPrefix) {
			marker, markerAt = trimmed, line
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if fence != "" {
		return nil, fmt.Errorf("%s: a fenced block is not closed", path)
	}
	if marker != "" {
		return nil, fmt.Errorf("%s:%d: a snippet marker must stand right before a ```go fence", path, markerAt)
	}
	return out, nil
}

// applyMarker reads a marker line into s.
func applyMarker(s *Snippet, marker string) error {
	body, ok := strings.CutSuffix(strings.TrimPrefix(marker, markerPrefix), "-->")
	if !ok {
		return fmt.Errorf("a snippet marker ends with -->: %s", marker)
	}
	verb, arg, _ := strings.Cut(strings.TrimSpace(body), " ")
	arg = strings.TrimSpace(arg)
	switch verb {
	case "skip":
		if arg == "" {
			return fmt.Errorf("a skipped snippet says why: <!-- snippet: skip REASON -->")
		}
		s.Skip = arg
	case "context":
		if _, ok := contextByName(arg); !ok {
			return fmt.Errorf("no snippet context %q", arg)
		}
		s.Context = arg
	default:
		return fmt.Errorf("unknown snippet marker %q (skip or context)", verb)
	}
	return nil
}

// moduleReadmes are the patterns of the module READMEs whose snippets are
// checked, each in its module (see choose).
var moduleReadmes = []string{"adapters/*/README.md", "frameworks/*/README.md", "stores/*/README.md"}

// Documents returns the Markdown files whose snippets are checked,
// relative to root: the README, docs/*.md and the module READMEs
// (adapters, frameworks and stores) under root.
func Documents(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, pat := range moduleReadmes {
		more, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pat)))
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		out = append(out, rel)
	}
	return out, nil
}
