package doccheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Problem is what is wrong with one snippet.
type Problem struct {
	Snippet Snippet
	Errors  []string // the compiler's messages, at Markdown positions
}

// Report is the outcome of a Check.
type Report struct {
	Snippets []Snippet // every snippet read
	Skipped  []Snippet // the snippets a skip marker leaves out
	Forms    map[Form]int
	Contexts map[string]int // snippets compiled per context
	Problems []Problem
}

// Check extracts the snippets of root's documents (Documents), makes each
// a package under a temporary directory _doccheck* of its context's
// module, and compiles them (goBuild: go list -export): once for the modules of
// root's workspace, once in each other module. It removes what it wrote.
// An error is a failure to run the check; what is wrong with the
// snippets is in the Report.
func Check(root string) (*Report, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	docs, err := Documents(root)
	if err != nil {
		return nil, err
	}
	rep := &Report{Forms: map[Form]int{}, Contexts: map[string]int{}}
	var units []*unit
	for _, doc := range docs {
		snips, err := Extract(filepath.Join(root, doc))
		if err != nil {
			return nil, err
		}
		for _, s := range snips {
			s.File = doc
			rep.Snippets = append(rep.Snippets, s)
			if s.Skip != "" {
				rep.Skipped = append(rep.Skipped, s)
				continue
			}
			u, err := generate(s, filepath.Join(root, doc), fmt.Sprintf("s%02d", len(rep.Snippets)))
			if err != nil {
				rep.Problems = append(rep.Problems, Problem{Snippet: s, Errors: []string{relative(root, err.Error())}})
				continue
			}
			rep.Forms[u.form]++
			rep.Contexts[u.ctx.name]++
			units = append(units, u)
		}
	}

	workspace, err := workspaceModules(root)
	if err != nil {
		return nil, err
	}
	// One temporary directory per module; one go build per directory the
	// go command runs in (the root for the workspace's modules).
	tmp := map[string]string{}      // module -> its temporary directory
	builds := map[string][]string{} // build directory -> packages
	owner := map[string]*unit{}     // package directory -> unit
	defer func() {
		for _, d := range tmp {
			os.RemoveAll(d)
		}
	}()
	for i, u := range units {
		mod := filepath.Join(root, u.ctx.module)
		if tmp[mod] == "" {
			d, err := os.MkdirTemp(mod, "_doccheck")
			if err != nil {
				return nil, err
			}
			tmp[mod] = d
		}
		dir := filepath.Join(tmp[mod], fmt.Sprintf("s%02d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		for name, src := range u.files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
				return nil, err
			}
		}
		owner[dir] = u
		at := mod
		if workspace[mod] {
			at = root
		}
		rel, err := filepath.Rel(at, dir)
		if err != nil {
			return nil, err
		}
		builds[at] = append(builds[at], "./"+filepath.ToSlash(rel))
	}
	dirs := make([]string, 0, len(builds))
	for d := range builds {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	// The go commands run side by side: each spends most of its time
	// loading its module graph and linking nothing, on one core.
	outs := make([][]byte, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(runtime.NumCPU(), 2))
	for i, at := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			outs[i], errs[i] = goBuild(at, builds[at])
		}()
	}
	wg.Wait()
	found := map[*unit][]string{}
	for i, at := range dirs {
		unattributed := attribute(root, at, outs[i], units, owner, found)
		if errs[i] != nil && len(unattributed) > 0 {
			return nil, fmt.Errorf("go build in %s: %v\n%s", at, errs[i], strings.Join(unattributed, "\n"))
		}
	}
	for _, u := range units {
		if errs := found[u]; len(errs) > 0 {
			rep.Problems = append(rep.Problems, Problem{Snippet: u.snip, Errors: errs})
		}
	}
	slices.SortFunc(rep.Problems, func(a, b Problem) int {
		if c := strings.Compare(a.Snippet.File, b.Snippet.File); c != 0 {
			return c
		}
		return a.Snippet.Line - b.Snippet.Line
	})
	return rep, nil
}

// goBuild compiles pkgs in dir, reporting every error (-e): go list
// -export compiles each package as go build does, in the same build
// cache, but links no program (a snippet's program linked against an
// SDK took seconds, and 71 snippets a minute).
func goBuild(dir string, pkgs []string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"list", "-export", "-gcflags=-e", "-f", `{{""}}`}, pkgs...)...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// workspaceModules returns the directories of the modules of root's
// workspace (go.work), or none when root has no workspace.
func workspaceModules(root string) (map[string]bool, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m in %s: %v", root, err)
	}
	mods := map[string]bool{}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		return mods, nil
	}
	for _, l := range strings.Fields(string(out)) {
		mods[filepath.Clean(l)] = true
	}
	return mods, nil
}

var mdPos = regexp.MustCompile(`^(\S+\.md):(\d+)(?::\d+)?: `)

// attribute files each line of go build's output (run in dir) under the
// unit it is about: by its Markdown position, or by its package's
// directory. It drops what a fragment cannot avoid ("declared and not
// used", "imported and not used") and returns the lines it could not
// attribute, but for the go command's package headers.
func attribute(root, dir string, out []byte, units []*unit, owner map[string]*unit, found map[*unit][]string) []string {
	var rest []string
	for _, line := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "# ") {
			continue
		}
		if strings.Contains(line, "declared and not used") || (strings.Contains(line, "imported") && strings.HasSuffix(line, "and not used")) {
			continue
		}
		var u *unit
		if m := mdPos.FindStringSubmatch(line); m != nil {
			file := m[1]
			if !filepath.IsAbs(file) {
				file = filepath.Join(dir, file)
			}
			rel, _ := filepath.Rel(root, file)
			n, _ := strconv.Atoi(m[2])
			for _, c := range units {
				if c.snip.File == rel && n >= c.snip.Line && n < c.snip.Line+strings.Count(c.snip.Code, "\n")+2 {
					u = c
					line = rel + strings.TrimPrefix(line, m[1])
					break
				}
			}
		}
		if u == nil {
			for d, c := range owner {
				if rel, _ := filepath.Rel(dir, d); strings.Contains(line, d) || strings.Contains(line, rel+string(filepath.Separator)) {
					u = c
					break
				}
			}
		}
		if u == nil {
			rest = append(rest, line)
			continue
		}
		found[u] = append(found[u], relative(root, line))
	}
	return rest
}

// relative shortens root's absolute paths in msg.
func relative(root, msg string) string {
	return strings.ReplaceAll(msg, root+string(filepath.Separator), "")
}

// String lists the problems, one snippet after another.
func (p Problem) String() string {
	return fmt.Sprintf("%s (%s):\n\t%s", p.Snippet.Where(), firstLine(p.Snippet.Code), strings.Join(p.Errors, "\n\t"))
}

func firstLine(code string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(code), "\n")
	if len(l) > 60 {
		l = l[:60] + "..."
	}
	return l
}
