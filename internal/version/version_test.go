package version

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// apiPackages are the internal packages adapters import outside tests.
var apiPackages = []string{"adapt", "anthropicmsg", "bytecache", "errtree", "media", "mediapart", "notice", "optset", "origins", "pairing", "pins", "regroup", "rules", "storekit", "summarize", "wireapi"}

// apiDigest is the digest of the exported declarations of apiPackages
// (Digest) for API 3, with the Trimmer's Close and SummaryDone and the
// package summarize (issue 27), the rules tables, the shared wrapper
// steps and errtree (issue 22), and the Messages API logic shared by the
// Anthropic adapters with the origins of opaque blocks (issue 24), and the
// Trimmer's saved state and the Conversations over native types (issue
// 32; Conversations takes the adapter's fixed request part since issue
// 33, before any release), and summarize's StartSummary (issue 33),
// and the door (adapt.Door, Request, Calibrations, ModelBudget, the
// Trimmer's Fit and Observe, FitConversation and ObserveConversation;
// issue 34, added), which an adapter built before them does not
// notice, and the Conversations' Reset, Forget, Close and RecallStore
// promoted from one embedded control (issue 34 item 7; the method sets
// are the same), and adapt.Limits for the framework modules' doors
// (issue 34, added), and adapt.DoorOptions, the door's options for those
// wrappers, with Calibrations bounded (issue 34, added; For is the same),
// and Conversation.Trimmer taking the model's name, one Trimmer per model
// (issue 34, before any release; its only callers are eino's ChatModel
// and langchaingo's Model, released with the core), and View.Release,
// which RawSplice calls once it has read what Back returned (issue 35,
// added: a View that does not set it is read as before), and
// regroup.Borrowed and Return, Groups in arrays given back, regroup.Arrays
// for a conversion's arrays, and anthropicmsg.SDK.Reuse (issue 35, added:
// Groups is as it was, and an SDK that leaves Reuse false converts as
// before), and bytecache, wireapi and storekit, which the Responses and
// Gemini adapters and the stores import, counted from issue 35 on, with
// bytecache.Stable (added: a Cache finds a value by its bytes as before,
// and by the address of stable bytes besides).
const apiDigest = "f060d21cd023620f"

// TestAPIDigest fails when the exported declarations of the internal
// packages adapters use change, so that whoever changes them decides
// whether adapters built for the previous ones still work.
func TestAPIDigest(t *testing.T) {
	var decls []string
	for _, pkg := range apiPackages {
		d, err := Exported(filepath.Join("..", pkg))
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range d {
			decls = append(decls, pkg+": "+decl)
		}
	}
	if got := Digest(decls); got != apiDigest {
		t.Errorf("the internal API adapters use changed (digest %s, recorded %s).\n"+
			"If an adapter built for the previous API would break or behave differently, raise API, rename V%d,\n"+
			"update every adapter's `var _ version.V%d`, and release core and adapters together.\n"+
			"Then record the new digest in apiDigest. The declarations now:\n%s",
			got, apiDigest, API, API, strings.Join(decls, "\n"))
	}
}

// TestMarker checks that version.go declares V<API> and no other V type, so
// that adapters written for another API do not build.
func TestMarker(t *testing.T) {
	decls, err := Exported(".")
	if err != nil {
		t.Fatal(err)
	}
	var marks []string
	for _, d := range decls {
		if name, ok := strings.CutPrefix(d, "type "); ok && strings.HasPrefix(name, "V") {
			marks = append(marks, strings.Fields(name)[0])
		}
	}
	if want := []string{"V" + strconv.Itoa(API)}; !slices.Equal(marks, want) {
		t.Errorf("marker types %v, want %v", marks, want)
	}
}

// TestAdapters checks that every adapter in this tree, and every other
// module whose code (tests aside) imports the core's internal packages
// (frameworks, stores), names the marker of the current API. (In a
// module cache the modules are not beside the core, and there is nothing
// to check.)
func TestAdapters(t *testing.T) {
	var dirs []string
	for _, pattern := range []string{"adapters", "frameworks", "stores"} {
		mods, _ := filepath.Glob(filepath.Join("..", "..", pattern, "*", "go.mod"))
		for _, mod := range mods {
			if dir := filepath.Dir(mod); pattern == "adapters" || importsInternal(t, dir) {
				dirs = append(dirs, dir)
			}
		}
	}
	if len(dirs) == 0 {
		return
	}
	want := "var _ version.V" + strconv.Itoa(API) + "\n"
	for _, dir := range dirs {
		src, err := os.ReadFile(filepath.Join(dir, "version.go"))
		if err != nil || !bytes.Contains(src, []byte(want)) {
			t.Errorf("%s: version.go does not declare %q (%v)", dir, strings.TrimSpace(want), err)
		}
	}
}

// importsInternal reports whether a .go file of dir that is not a test
// imports one of the core's internal packages.
func importsInternal(t *testing.T, dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(src, []byte(`"github.com/histrim/history/internal/`)) {
			return true
		}
	}
	return false
}

func TestExportedAndDigest(t *testing.T) {
	dir := t.TempDir()
	src := `package p

// Doc comments do not count.
type T struct {
	A int // nor do line comments
	b string
}

type u int

const C, d = 1, 2

func F(x int) (string, error) { return "", nil }

func (T) M() {}

func (u) N() {}

func g() {}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc Helper() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Exported(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"const C, d = 1, 2",
		"func (T) M()",
		"func F(x int) (string, error)",
		"type T struct {\n\tA\tint\n\tb\tstring\n}",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Exported = %q\nwant %q", got, want)
	}
	if Digest(want) != Digest(slices.Clone(want)) || Digest(want) == Digest(want[1:]) {
		t.Error("Digest must depend on the declarations and only on them")
	}
}

// Exported returns the exported declarations of the Go package in dir
// (test files left out), printed without comments or function bodies,
// sorted: the package's API as a list of lines. A const, var or type block
// that declares an exported name is printed whole.
func Exported(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []string
	emit := func(n any) error {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			return err
		}
		out = append(out, b.String())
		return nil
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				d.Body = nil
				err = emit(d)
			case *ast.GenDecl:
				// A whole block, so that the values iota gives stay visible.
				if slices.ContainsFunc(d.Specs, exportedSpec) {
					err = emit(d)
				}
			}
			if err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedSpec reports whether a type, constant or variable spec declares
// an exported name.
func exportedSpec(s ast.Spec) bool {
	switch s := s.(type) {
	case *ast.TypeSpec:
		return s.Name.IsExported()
	case *ast.ValueSpec:
		for _, n := range s.Names {
			if n.IsExported() {
				return true
			}
		}
	}
	return false
}

// Digest returns a short hex digest of decls.
func Digest(decls []string) string {
	sum := sha256.Sum256([]byte(strings.Join(decls, "\n\x00")))
	return hex.EncodeToString(sum[:8])
}
