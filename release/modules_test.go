package release

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history/internal/version"
	"golang.org/x/mod/modfile"
)

// corePath is the core module's path; every module of the repository
// has it as a prefix.
const corePath = "github.com/histrim/history"

// mod is a module of the repository.
type mod struct {
	// Path is the module path; Dir its directory in the repository,
	// slash-separated ("." for the core).
	Path, Dir string
	// Requires are the paths of the repository's modules its go.mod
	// requires, and Versions the versions it requires them at, in the
	// same order.
	Requires, Versions []string
}

// Tag returns the tag that releases the module at version v: v for the
// core, <dir>/v for a module in a subdirectory.
func (m mod) Tag(v string) string {
	if m.Dir == "." {
		return v
	}
	return m.Dir + "/" + v
}

// published reports whether the module in dir (slash-separated, relative
// to the repository's root) is one a release tags: the core, and every
// module directly under adapters/, frameworks/ or stores/. The modules
// nested deeper (the SDK-version test modules), bench and release are
// never published.
func published(dir string) bool {
	if dir == "." {
		return true
	}
	parent, name := path.Split(dir)
	return name != "" && slices.Contains([]string{"adapters/", "frameworks/", "stores/"}, parent)
}

// repoRoot returns the repository's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// modules returns every module of the repository that a release
// publishes, the core first, then by path; it reads their go.mod files.
func modules(t *testing.T) []mod {
	t.Helper()
	root := repoRoot(t)
	var mods []mod
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		if !published(rel) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.ParseLax(p, data, nil)
		if err != nil {
			return err
		}
		m := mod{Path: f.Module.Mod.Path, Dir: rel}
		for _, r := range f.Require {
			if r.Mod.Path == corePath || strings.HasPrefix(r.Mod.Path, corePath+"/") {
				m.Requires = append(m.Requires, r.Mod.Path)
				m.Versions = append(m.Versions, r.Mod.Version)
			}
		}
		mods = append(mods, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(mods, func(a, b mod) int { return strings.Compare(a.Path, b.Path) })
	if len(mods) == 0 || mods[0].Path != corePath {
		t.Fatalf("the core module %s is not at the repository's root", corePath)
	}
	return mods
}

// closure returns the modules m needs from the repository, itself
// included: those its go.mod requires, and theirs, the core first, then
// by path.
func closure(t *testing.T, mods []mod, m mod) []mod {
	t.Helper()
	byPath := map[string]mod{}
	for _, x := range mods {
		byPath[x.Path] = x
	}
	seen := map[string]bool{}
	var walk func(x mod)
	walk = func(x mod) {
		if seen[x.Path] {
			return
		}
		seen[x.Path] = true
		for _, r := range x.Requires {
			dep, ok := byPath[r]
			if !ok {
				t.Fatalf("%s requires %s, which the repository does not publish", x.Path, r)
			}
			walk(dep)
		}
	}
	walk(m)
	var out []mod
	for _, x := range mods { // mods is in the order wanted
		if seen[x.Path] {
			out = append(out, x)
		}
	}
	return out
}

// TestModuleRequirements checks that every published module requires the
// repository's modules at the release, version.Core: a release tags them
// all at once, so a module requiring another version of one of them gets,
// through minimum version selection, a pair that was never tested
// together (or a version no proxy serves).
func TestModuleRequirements(t *testing.T) {
	mods := modules(t)
	for _, m := range mods {
		if m.Path != corePath && !slices.Contains(m.Requires, corePath) {
			t.Errorf("%s does not require the core", m.Path)
		}
		for i, r := range m.Requires {
			if m.Versions[i] != version.Core {
				t.Errorf("%s requires %s %s, want the release %s", m.Path, r, m.Versions[i], version.Core)
			}
		}
		if want := path.Join(corePath, m.Dir); m.Path != want {
			t.Errorf("the module in %s is %s, want %s (its tag, %s, names the directory)", m.Dir, m.Path, want, m.Tag(version.Core))
		}
	}
}
