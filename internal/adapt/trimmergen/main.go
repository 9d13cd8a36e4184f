// Command trimmergen writes an adapter's Trimmer (trimmer_gen.go): a named
// type over the internal adapt.Trimmer, with every method declared, so
// that go doc shows them (a type alias of an internal generic type shows
// none: "go doc hopenai.Trimmer.Trim" answered "no method or field").
// Every adapter's Trimmer comes from this one template; the adapter keeps
// NewTrimmer, which wraps its codec's Trimmer.
//
// Run by go generate in the adapter's package:
//
//	//go:generate go run github.com/histrim/history/internal/adapt/trimmergen -system struct{} -message openai.ChatCompletionMessageParamUnion
//
// -system is the type of the system prompt the SDK takes apart from the
// messages (struct{} when it takes none), -message the SDK's message type;
// -params and -usage, when given, the types of the SDK's request and of a
// response's usage, for the door (Fit and Observe, through the package's
// door, an adapt.Door the adapter declares); their packages are imported
// as the package's other files import them; -conversations, with them,
// the adapt type the package's Conversations embeds (Conversations or
// SystemConversations), whose Fit and Observe it writes too. An adapter
// whose SDK has no request type (gemini, eino, langchaingo) writes its
// Fit and Observe itself, over the same adapt functions.
// TestGenerated checks every adapter's file against this template.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// Output is the file trimmergen writes.
const Output = "trimmer_gen.go"

func main() {
	var sp Spec
	flag.StringVar(&sp.System, "system", "struct{}", "the type of the system prompt the SDK takes apart")
	flag.StringVar(&sp.Message, "message", "", "the SDK's message type")
	flag.StringVar(&sp.Params, "params", "", "the SDK's request type, for the door")
	flag.StringVar(&sp.Usage, "usage", "", "the type of a response's usage, for the door")
	flag.StringVar(&sp.Conv, "conversations", "", "the adapt type the package's Conversations embeds (Conversations or SystemConversations), for its door")
	flag.Parse()
	if sp.Message == "" || (sp.Params == "") != (sp.Usage == "") {
		fmt.Fprintln(os.Stderr, "trimmergen: -message is required, and -params and -usage go together")
		os.Exit(2)
	}
	src, err := Generate(".", sp)
	if err == nil {
		err = os.WriteFile(Output, src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trimmergen:", err)
		os.Exit(1)
	}
}

// Spec is what a directive gives: the types the Trimmer is made for.
type Spec struct {
	System, Message string // the system prompt's and a message's
	Params, Usage   string // the request's and a response's usage ("": no door)
	Conv            string // the adapt type Conversations embeds ("": no door on it)
}

// Generate returns the Trimmer file of the package in dir, for the types
// of sp.
func Generate(dir string, sp Spec) ([]byte, error) {
	if sp.System == "" {
		sp.System = "struct{}"
	}
	pkg, imports, err := packageImports(dir)
	if err != nil {
		return nil, err
	}
	need := map[string]string{
		"context": "context",
		"history": "github.com/histrim/history",
		"adapt":   "github.com/histrim/history/internal/adapt",
	}
	for _, typ := range []string{sp.System, sp.Message, sp.Params, sp.Usage} {
		if typ == "" {
			continue
		}
		expr, err := parser.ParseExpr(typ)
		if err != nil {
			return nil, fmt.Errorf("type %q: %v", typ, err)
		}
		var missing error
		ast.Inspect(expr, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok {
					if p, ok := imports[id.Name]; ok {
						need[id.Name] = p
					} else {
						missing = fmt.Errorf("type %q: no file of package %s imports %s", typ, pkg, id.Name)
					}
				}
			}
			return true
		})
		if missing != nil {
			return nil, missing
		}
	}
	var lines []string
	for name, p := range need {
		if filepathBase(p) == name {
			lines = append(lines, strconv.Quote(p))
		} else {
			lines = append(lines, name+" "+strconv.Quote(p))
		}
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(unname(a), unname(b)) })
	// The standard library's first, then a blank line, as goimports groups them.
	std := func(line string) bool { return !strings.Contains(strings.SplitN(unname(line), "/", 2)[0], ".") }
	if i := slices.IndexFunc(lines, func(l string) bool { return !std(l) }); i > 0 {
		lines = slices.Insert(lines, i, "")
	}
	var b bytes.Buffer
	err = tmpl.Execute(&b, struct {
		Spec
		Package string
		Imports []string
	}{sp, pkg, lines})
	if err != nil {
		return nil, err
	}
	return format.Source(b.Bytes())
}

// packageImports returns the name of the package in dir and what its
// files (but tests and Output) import, by the name they use it by: a
// name the import gives, or, for an import without one, the name a file
// uses it by among those its path suggests (the last element, without a
// major version, a "go-" prefix, a "-go" suffix or what follows a dash).
func packageImports(dir string) (string, map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", nil, err
	}
	pkg, imports := "", map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == Output {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			return "", nil, err
		}
		pkg = file.Name.Name
		used := map[string]bool{}
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok {
					used[id.Name] = true
				}
			}
			return true
		})
		for _, spec := range file.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if spec.Name != nil {
				imports[spec.Name.Name] = p
				continue
			}
			for _, name := range guesses(p) {
				if used[name] {
					imports[name] = p
				}
			}
		}
	}
	if pkg == "" {
		return "", nil, fmt.Errorf("no Go files in %s", dir)
	}
	return pkg, imports, nil
}

// guesses returns the names the package at import path p may have.
func guesses(p string) []string {
	base := filepathBase(p)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" && strings.Contains(p, "/") {
		base = filepathBase(p[:len(p)-len(base)-1])
	}
	out := []string{base, strings.TrimPrefix(base, "go-"), strings.TrimSuffix(base, "-go")}
	if i := strings.IndexByte(base, '-'); i > 0 {
		out = append(out, base[:i])
	}
	return out
}

func filepathBase(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// unname returns an import line's path, for sorting.
func unname(line string) string { return line[strings.IndexByte(line, '"'):] }

var tmpl = template.Must(template.New("").Parse(`// Code generated by trimmergen (internal/adapt/trimmergen, run by go generate); DO NOT EDIT.

package {{.Package}}

import (
{{range .Imports}}{{if .}}	{{.}}{{end}}
{{end}})

// Trimmer is the stateful trimmer of a conversation's messages: a
// history.Trimmer (maintenance points, cold resume, summaries, the plan
// kept between requests so that the provider's prompt cache survives)
// over the caller's whole transcript, its decisions mapped back onto the
// caller's messages as [Trim] maps them. Pins (history.WithPin) index the
// transcript, which only grows. It is safe for concurrent use; use one
// per conversation, made by [NewTrimmer]. See docs/adapters.md, "The
// stateful trimmer".
//
// MarshalBinary and UnmarshalBinary save and restore its state (for
// another replica, or after a restart); [Conversations] keeps it in a
// history.StateStore shared by a runtime's replicas.
type Trimmer struct {
	t *adapt.Trimmer[{{.System}}, {{.Message}}]
}

// Trim returns the messages to send for transcript, the caller's whole
// conversation, under budget, as history.Trimmer.Trim decides it, mapped
// back as [Trim] maps a decision. The Result describes the transcript as
// Trim describes its input. Call it once before every request.
func (t *Trimmer) Trim(transcript []{{.Message}}, budget int) ([]{{.Message}}, history.Result, error) {
	return t.t.Trim(transcript, budget)
}

// TrimContext is Trim with a context for the summarizer of
// history.WithSummarizer (see history.Trimmer.TrimContext).
func (t *Trimmer) TrimContext(ctx context.Context, transcript []{{.Message}}, budget int) ([]{{.Message}}, history.Result, error) {
	return t.t.TrimContext(ctx, transcript, budget)
}

// RecoverOverflow trims what the last Trim sent for transcript further
// after the provider rejected it for its length (providerErr read as
// [RecoverOverflow] reads it), and maps the decision back onto the
// transcript as Trim does. transcript must be that of the last Trim. Its
// results are those of [RecoverOverflow]: history.ErrNotOverflow with nil
// messages (send what Trim returned, or give up), a
// *history.RecoverError with what is left. After a recovery the
// Trimmer's next plans fit what the provider said
// (history.Trimmer.RecoverOverflow).
func (t *Trimmer) RecoverOverflow(transcript []{{.Message}}, providerErr error, attempt int) ([]{{.Message}}, history.Result, error) {
	return t.t.RecoverOverflow(transcript, providerErr, attempt)
}

// Reset forgets the plan: the next Trim plans afresh (see
// history.Trimmer.Reset).
func (t *Trimmer) Reset() { t.t.Reset() }

// Close stops the background summary in flight, if any
// (history.SummaryOptions.Background), and waits for the Summarizer's call
// to return (see history.Trimmer.Close). The Trimmer still trims after
// Close, but starts no background summary. It returns nil, and is safe to
// call more than once, and concurrently with Trim.
func (t *Trimmer) Close() error { return t.t.Close() }

// SummaryDone returns a channel closed when the background summary in
// flight has finished, or already closed when there is none (see
// history.Trimmer.SummaryDone).
func (t *Trimmer) SummaryDone() <-chan struct{} { return t.t.SummaryDone() }

// Summary returns the summary the last prompt holds and what it covers
// (history.Trimmer.Summary): the summary as a core message, with the
// turns, messages and tokens it stands for; false when the prompt holds
// none. From and UpTo index the converted transcript ([ToHistory] of it).
func (t *Trimmer) Summary() (history.SummaryInfo, bool) { return t.t.Summary() }

// MarshalBinary saves what the Trimmer remembers between calls, for
// UnmarshalBinary on another Trimmer of this adapter with the same options
// and system prompt (on another replica, or after a restart): its core
// Trimmer's state (history.Trimmer.MarshalBinary: the plan, the summary,
// what a recovery learnt, the time of the last request; no copy of the
// messages) and the pins that Trimmer was made with. The form starts with
// "htra" and names the adapter. It never fails.
func (t *Trimmer) MarshalBinary() ([]byte, error) { return t.t.MarshalBinary() }

// UnmarshalBinary restores a state saved by MarshalBinary, replacing what
// the Trimmer remembers (its options and system prompt stay its own): the
// next Trim sends, byte for byte, what the Trimmer that saved it would
// have sent. A state that cannot be read, that another adapter's Trimmer
// saved, or whose core state history.Trimmer.UnmarshalBinary refuses, is
// refused with a *history.StateError (wrapping history.ErrInvalidState or
// history.ErrForeignState) and the Trimmer is left unchanged. A
// background summary the Trimmer had in flight is stopped.
func (t *Trimmer) UnmarshalBinary(data []byte) error { return t.t.UnmarshalBinary(data) }
{{if .Params}}
// Fit is the door: it trims the transcript params sends (its messages, the
// conversation's whole transcript) for the model params names and returns
// params sending the messages to send, its other fields as they were. The
// budget is the model's, from the table (models.Lookup, cached per name):
// its window less the output params asks room for (its max tokens, else
// the model's output limit), less what params sends besides its messages
// (tools, a response schema: [Overhead]), less history.MarginShare of the
// window until the model's Calibration, which the Trimmer owns, has
// observed a response ([Trimmer.Observe]). It trims with the options of
// the fit package for the model (the exact counter when its tokenizer is
// public, the task preset, the cache policy), then the Trimmer's own,
// which override them. A model the table does not know returns params as
// given and an error wrapping models.ErrUnknownModel: a budget is never
// guessed. On a context overflow, call RecoverOverflow with the same
// transcript. params is not modified.
func (t *Trimmer) Fit(ctx context.Context, params {{.Params}}) ({{.Params}}, history.Result, error) {
	return adapt.FitParams(ctx, t.t, door, params)
}

// Observe feeds the input the provider reports in usage (the response to
// the request the last Fit or Trim returned) to the Calibration that trim
// used, and returns its verdict (history.Trimmer.Observe):
// history.VerdictInvalid, recording nothing, before any trim, without a
// Calibration, or when usage reports no input.
func (t *Trimmer) Observe(usage {{.Usage}}) history.Verdict {
	return adapt.ObserveUsage(t.t, door, usage)
}
{{end}}{{if and .Params .Conv}}
// Fit is [Trimmer.Fit] for the conversation key, with its state loaded
// from the store and saved back (see Trim), so that every replica sends
// what one process would. The conversations share a Calibration per
// model, which [Conversations.Observe] feeds. params is not modified.
func (cs *Conversations) Fit(ctx context.Context, key string, params {{.Params}}) ({{.Params}}, history.Result, error) {
	return adapt.FitConversation[{{.Params}}, {{.Usage}}, {{.System}}, {{.Message}}](ctx, cs.{{.Conv}}, door, key, params)
}

// Observe feeds the input the provider reports in usage, the response to
// params (as Fit returned it, with res), to the conversations' Calibration
// of the model params names, and returns its verdict:
// history.VerdictInvalid, recording nothing, when res sent nothing or
// usage reports no input.
func (cs *Conversations) Observe(params {{.Params}}, res history.Result, usage {{.Usage}}) history.Verdict {
	return adapt.ObserveConversation[{{.Params}}, {{.Usage}}, {{.System}}, {{.Message}}](cs.{{.Conv}}, door, params, res, usage)
}
{{end}}`))
