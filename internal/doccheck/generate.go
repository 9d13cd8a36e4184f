package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Form says how a snippet becomes Go source.
type Form int

const (
	// File is a snippet with a package clause: it compiles as written.
	File Form = iota
	// Decls is a snippet of declarations: a file of a package of its own.
	Decls
	// Body is a snippet of statements: the body of func _() error.
	Body
)

func (f Form) String() string { return [...]string{"file", "declarations", "statements"}[f] }

// unit is a snippet made into a package.
type unit struct {
	snip  Snippet
	form  Form
	ctx   *context
	files map[string]string // file name -> source
}

// generate makes s into a package named pkg, whose positions read as lines
// of the Markdown file at absFile. A snippet that does not parse is an
// error with its Markdown position.
func generate(s Snippet, absFile, pkg string) (*unit, error) {
	code := s.Code
	at := func(line int) string { return fmt.Sprintf("//line %s:%d:1\n", absFile, line) }
	if startsWithPackage(code) {
		u := &unit{snip: s, form: File, files: map[string]string{"snippet.go": at(s.Line) + code}}
		f, err := parser.ParseFile(token.NewFileSet(), "snippet.go", u.files["snippet.go"], parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		u.ctx = choose(s, nil, imported(f))
		return u, nil
	}
	head, rest, err := splitImports(code)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %v", absFile, s.Line, err)
	}
	restLine := s.Line + strings.Count(head, "\n")
	const pkgLine = "package %s\n\n"
	var (
		form Form
		src  string
		file *ast.File
	)
	decls := fmt.Sprintf(pkgLine, pkg) + at(s.Line) + code
	if f, err := parser.ParseFile(token.NewFileSet(), "snippet.go", decls, 0); err == nil {
		form, src, file = Decls, decls, f
	} else {
		body := fmt.Sprintf(pkgLine, pkg) + at(s.Line) + head + "func _() error {\n" + at(restLine) + rest + "\nreturn nil\n}\n"
		f, err := parser.ParseFile(token.NewFileSet(), "snippet.go", body, 0)
		if err != nil {
			return nil, err
		}
		form, src, file = Body, body, f
	}
	own := imported(file)
	free := unresolved(file)
	ctx := choose(s, free, own)
	pkgs, names := ctx.allPackages(), ctx.allNames()
	var (
		imports = map[string]string{} // name -> path, for snippet.go
		env     []string              // declarations, for env.go
		envSeen = map[string]bool{}
	)
	var declare func(name string)
	declare = func(name string) {
		if envSeen[name] {
			return
		}
		envSeen[name] = true
		decl := names[name]
		env = append(env, decl)
		// A declaration may name other well-known names.
		f, err := parser.ParseFile(token.NewFileSet(), "env.go", "package p\n"+decl, 0)
		if err != nil {
			return // reported when env.go compiles
		}
		for _, n := range unresolved(f) {
			if _, ok := pkgs[n]; !ok && names[n] != "" {
				declare(n)
			}
		}
	}
	for _, n := range free {
		if _, ok := own[n]; ok {
			continue
		}
		if p, ok := pkgs[n]; ok {
			imports[n] = p
		} else if names[n] != "" {
			declare(n)
		}
	}
	src = strings.Replace(src, "\n\n", "\n\n"+importBlock(imports), 1)
	u := &unit{snip: s, form: form, ctx: ctx, files: map[string]string{"snippet.go": src}}
	if len(env) > 0 {
		envSrc := "package p\n" + strings.Join(env, "\n")
		f, err := parser.ParseFile(token.NewFileSet(), "env.go", envSrc, 0)
		if err != nil {
			return nil, fmt.Errorf("the declarations of the well-known names of context %s: %v", ctx.name, err)
		}
		envImports := map[string]string{}
		for _, n := range unresolved(f) {
			if p, ok := pkgs[n]; ok {
				envImports[n] = p
			}
		}
		u.files["env.go"] = fmt.Sprintf(pkgLine, pkg) + importBlock(envImports) + strings.Join(env, "\n\n") + "\n"
	}
	return u, nil
}

// startsWithPackage reports whether code's first token is package.
func startsWithPackage(code string) bool {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", -1, len(code)), []byte(code), nil, 0)
	_, tok, _ := s.Scan()
	return tok == token.PACKAGE
}

// splitImports splits code into its leading import declarations (through
// the end of the line the last one ends on) and the rest.
func splitImports(code string) (head, rest string, err error) {
	const prefix = "package p\n"
	f, err := parser.ParseFile(token.NewFileSet(), "", prefix+code, parser.ImportsOnly)
	if err != nil || len(f.Imports) == 0 {
		return "", code, nil // the full parse reports what is wrong
	}
	var end token.Pos
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			end = g.End()
		}
	}
	off := int(end) - 1 - len(prefix) // token.Pos of a one-file set is offset + 1
	if nl := strings.IndexByte(code[off:], '\n'); nl >= 0 {
		off += nl + 1
	} else {
		off = len(code)
	}
	return code[:off], code[off:], nil
}

// imported returns f's imports, by the name they are used by.
func imported(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, spec := range f.Imports {
		p, _ := strconv.Unquote(spec.Path.Value)
		name := packageName(p)
		if spec.Name != nil {
			name = spec.Name.Name
		}
		out[name] = p
	}
	return out
}

// packageName guesses the name of the package at import path p: its last
// element, without a major version, a "go-" prefix or dashes.
func packageName(p string) string {
	base := path.Base(p)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		base = path.Base(path.Dir(p))
	}
	base = strings.TrimPrefix(base, "go-")
	return strings.ReplaceAll(base, "-", "")
}

// unresolved returns the names f uses without declaring, but for the
// universe's (int, error, nil, append, ...), sorted.
func unresolved(f *ast.File) []string {
	seen := map[string]bool{}
	for _, id := range f.Unresolved {
		if types.Universe.Lookup(id.Name) == nil {
			seen[id.Name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// choose returns s's context: the one its marker names, else the one of
// the module whose README s is in (a module README's snippets compile in
// that module, as its users build them), else the first whose key it
// imports or names, else the core's.
func choose(s Snippet, free []string, own map[string]string) *context {
	if s.Context != "" {
		c, _ := contextByName(s.Context)
		return c
	}
	if dir := path.Dir(filepath.ToSlash(s.File)); dir != "." {
		for i := range contexts {
			if contexts[i].module == dir {
				return &contexts[i]
			}
		}
	}
	for i := range contexts {
		c := &contexts[i]
		pkgs := c.allPackages()
		for _, p := range own {
			if slices.Contains(c.keys, p) {
				return c
			}
		}
		for _, n := range free {
			if _, ok := own[n]; ok {
				continue
			}
			if slices.Contains(c.keys, pkgs[n]) {
				return c
			}
		}
	}
	c, _ := contextByName("core")
	return c
}

// importBlock returns an import declaration of imports (name -> path), or
// "" when there are none.
func importBlock(imports map[string]string) string {
	if len(imports) == 0 {
		return ""
	}
	lines := make([]string, 0, len(imports))
	for n, p := range imports {
		lines = append(lines, fmt.Sprintf("\t%s %q\n", n, p))
	}
	slices.Sort(lines)
	return "import (\n" + strings.Join(lines, "") + ")\n\n"
}
