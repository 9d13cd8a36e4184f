package release

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
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

// unpublished are the modules of the repository that a release never
// tags, by directory, with the reason: every other module is published.
// docs/adapters.md ("Releasing") names them; TestPublishedModules holds
// this list to the tree's go.mod files and to that section.
var unpublished = map[string]string{
	"adapters/openai/sdklatest":    "tests the openai adapter with the newest openai-go, which the adapter does not require",
	"adapters/langchaingo/sdktest": "tests the langchaingo adapter with LangChainGo providers whose SDKs the released modules must not select",
	"wire/sdktest":                 "drives package wire's Transport with the providers' real Go SDK clients, which the core must stay free of",
	"bench":                        "the benchmarks and the corpus measurements, run from the tree",
	"release":                      "these tests of the release, run from the tree",
}

// published reports whether the module in dir (slash-separated, relative
// to the repository's root) is one a release tags: every module but the
// unpublished ones.
func published(dir string) bool {
	_, no := unpublished[dir]
	return !no
}

// command reports whether the module in dir is a command a user installs
// with go install (its README says how), rather than a library a user's
// module requires: the modules under cmd/.
func command(dir string) bool {
	return path.Dir(dir) == "cmd"
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

// goModDirs returns the directory of every go.mod file in the tree
// (slash-separated, relative to the root; "." for the core), sorted,
// leaving out dot directories and testdata as modules does.
func goModDirs(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(dirs)
	return dirs
}

// TestPublishedModules checks that a release publishes every module of
// the tree but those documented as never published: the modules the
// release tests cover (TestReleasingSteps, TestConsumerModule,
// TestInstallDocs) are every go.mod's but the unpublished ones, each of
// which exists and is named in docs/adapters.md's "Releasing" section.
// (cmd/histrim-gateway, a module of its own, was left out of the release
// steps and of the consumer test by a rule that only knew adapters/,
// frameworks/ and stores/.)
func TestPublishedModules(t *testing.T) {
	var got []string
	for _, m := range modules(t) {
		got = append(got, m.Dir)
	}
	var want []string
	all := goModDirs(t)
	for _, dir := range all {
		if _, no := unpublished[dir]; !no {
			want = append(want, dir)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("a release publishes %v; want every module but the unpublished ones: %v", got, want)
	}
	_, releasing, _ := strings.Cut(readDoc(t, "docs/adapters.md"), "\n## Releasing\n")
	releasing, _, _ = strings.Cut(releasing, "\n1. ")
	for dir, reason := range unpublished {
		if !slices.Contains(all, dir) {
			t.Errorf("unpublished names %s (%s), which holds no go.mod", dir, reason)
		}
		if !strings.Contains(releasing, "`"+dir+"`") {
			t.Errorf("docs/adapters.md's \"Releasing\" does not say that %s is never published (%s)", dir, reason)
		}
	}
}
