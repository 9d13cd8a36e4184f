package main

import (
	"bufio"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const directive = "//go:generate go run github.com/histrim/history/internal/adapt/trimmergen "

// adapters returns the directories of the adapter packages (those that
// declare NewTrimmer) and the arguments of their trimmergen directive
// (none: the package has no directive).
func adapters(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "adapters", "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("..", "..", "..", "adapters", "*", "*", "*.go"))
	out := map[string][]string{}
	for _, f := range append(files, more...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if args, ok := strings.CutPrefix(sc.Text(), directive); ok {
				out[filepath.Dir(f)] = strings.Fields(args)
			} else if strings.HasPrefix(sc.Text(), "func NewTrimmer(") && out[filepath.Dir(f)] == nil {
				out[filepath.Dir(f)] = []string{} // an adapter's Trimmer: the directive must follow
			}
		}
		fh.Close()
	}
	return out
}

// TestGenerated: every adapter's trimmer_gen.go is what the template makes
// of its directive (run go generate in the adapter after changing either),
// and carries the generated-code line.
func TestGenerated(t *testing.T) {
	dirs := adapters(t)
	if len(dirs) < 9 {
		t.Fatalf("%d adapters with the directive, want the 8 adapters and anthropicv2/beta: %v", len(dirs), dirs)
	}
	for dir, args := range dirs {
		if len(args) == 0 {
			t.Errorf("%s declares NewTrimmer without the trimmergen directive", dir)
			continue
		}
		var sp Spec
		for i := 0; i+1 < len(args); i += 2 {
			switch args[i] {
			case "-system":
				sp.System = args[i+1]
			case "-message":
				sp.Message = args[i+1]
			case "-params":
				sp.Params = args[i+1]
			case "-usage":
				sp.Usage = args[i+1]
			case "-conversations":
				sp.Conv = args[i+1]
			}
		}
		want, err := Generate(dir, sp)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, Output))
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s/%s is not the template's: run go generate there", dir, Output)
		}
		if !strings.HasPrefix(string(got), "// Code generated ") || !strings.Contains(strings.SplitN(string(got), "\n", 2)[0], " DO NOT EDIT.") {
			t.Errorf("%s/%s has no generated-code line", dir, Output)
		}
	}
}

// TestDocumented: go doc shows every method of every adapter's Trimmer
// (with a type alias of adapt.Trimmer it showed none: "go doc
// hopenai.Trimmer.Trim" answered "no method or field").
func TestDocumented(t *testing.T) {
	// Fit and Observe are the door (issue 34 item 2): every adapter's
	// Trimmer has them, generated or, for an SDK without a request type,
	// written by the adapter.
	want := []string{"Close", "Fit", "MarshalBinary", "Observe", "RecoverOverflow", "Reset", "Summary", "SummaryDone", "Trim", "TrimContext", "UnmarshalBinary"}
	for dir := range adapters(t) {
		fset := token.NewFileSet()
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		var files = names[:0]
		for _, n := range names {
			if !strings.HasSuffix(n, "_test.go") {
				files = append(files, n)
			}
		}
		var parsed = make([]*ast.File, 0, len(files))
		for _, f := range files {
			file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			parsed = append(parsed, file)
		}
		p, err := doc.NewFromFiles(fset, parsed, "example.com/"+filepath.Base(dir))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, typ := range p.Types {
			if typ.Name == "Trimmer" {
				for _, m := range typ.Methods {
					got = append(got, m.Name)
					if strings.TrimSpace(m.Doc) == "" {
						t.Errorf("%s: Trimmer.%s has no doc comment", dir, m.Name)
					}
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: go doc shows Trimmer's methods %v, want %v", dir, got, want)
		}
	}
}
