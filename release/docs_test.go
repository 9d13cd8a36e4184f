package release

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history/internal/version"
)

// checkout is where the install commands put a checkout of the
// repository: beside the user's module.
const checkout = "../histrim"

// beforeRelease returns the commands that make a user's module depend on
// m, and need (the modules m needs from the repository, m included, from
// closure), from a checkout of the repository, as the docs give them: a
// replace of each with its directory in the checkout, and a go get of m
// at the checkout's version (version.Core).
func beforeRelease(m mod, need []mod) string {
	var b strings.Builder
	b.WriteString("git clone https://github.com/histrim/history " + checkout + "\n")
	b.WriteString("go mod edit \\\n")
	for i, x := range need {
		b.WriteString("  -replace=" + x.Path + "=" + path.Join(checkout, x.Dir))
		if i < len(need)-1 {
			b.WriteString(" \\")
		}
		b.WriteString("\n")
	}
	b.WriteString("go get " + m.Path + "@" + version.Core + "\n")
	b.WriteString("go mod tidy\n")
	return b.String()
}

// afterRelease returns the commands that move a module set up by
// beforeRelease to the release on the module proxy, as the docs give
// them: drop the replace lines, go get m's latest release.
func afterRelease(m mod, need []mod) string {
	var b strings.Builder
	b.WriteString("# from a checkout (above): drop its replace lines\n")
	b.WriteString("go mod edit \\\n")
	for i, x := range need {
		b.WriteString("  -dropreplace=" + x.Path)
		if i < len(need)-1 {
			b.WriteString(" \\")
		}
		b.WriteString("\n")
	}
	b.WriteString("# then, or in a new module:\n")
	b.WriteString("go get " + m.Path + "@latest\n")
	b.WriteString("go mod tidy\n")
	return b.String()
}

// installCommands returns the commands that install the command module
// m, as its README gives them: go install of the module's directory in a
// checkout of the repository (its go.work builds it against the tree)
// before the release, and go install of its latest release after it.
func installCommands(m mod) [2]string {
	return [2]string{"go -C " + m.Dir + " install .", "go install " + m.Path + "@latest"}
}

// installLines returns the lines of the first shell block of the
// document text that run go (go install, go -C ... install), their
// comments left out.
func installLines(text string) []string {
	_, block, _ := strings.Cut(text, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, line := range strings.Split(block, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "go ") {
			lines = append(lines, line)
		}
	}
	return lines
}

// docOf returns the document, relative to the repository's root, that
// tells a user how to install m and holds the program the consumer test
// builds: docs/install.md for the core, the module's README otherwise.
func docOf(m mod) string {
	if m.Dir == "." {
		return "docs/install.md"
	}
	return m.Dir + "/README.md"
}

// readDoc returns the text of the document name, relative to the
// repository's root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// program returns the first Go block of the document name that is a
// whole program (it starts with "package main").
func program(t *testing.T, name string) string {
	t.Helper()
	for _, m := range goBlock.FindAllStringSubmatch(readDoc(t, name), -1) {
		if strings.HasPrefix(m[1], "package main\n") {
			return m[1]
		}
	}
	t.Fatalf("%s has no Go block that is a whole program (package main)", name)
	return ""
}

// hasBlock reports whether the document text holds a shell block whose
// text is exactly block.
func hasBlock(text, block string) bool {
	return strings.Contains(text, "```sh\n"+block+"```\n")
}

// readmeModule is the module whose install commands the repository's
// README gives (its usage section is the openai-go loop).
const readmeModule = corePath + "/adapters/openai"

// TestInstallDocs checks that every published module's document gives
// the commands that install it before and after a release, exactly as
// TestConsumerModule runs them, and a program (a command module's README,
// the go install lines of installCommands instead); that docs/install.md
// links every module's README; and that the README (and docs/install.md,
// as its example) gives the commands of the module the README's usage
// section uses.
func TestInstallDocs(t *testing.T) {
	mods := modules(t)
	install := readDoc(t, "docs/install.md")
	for _, m := range mods {
		doc := docOf(m)
		text := readDoc(t, doc)
		if m.Dir != "." && !strings.Contains(install, "](../"+m.Dir+"/README.md)") {
			t.Errorf("docs/install.md does not link %s/README.md", m.Dir)
		}
		if command(m.Dir) {
			if want := installCommands(m); !slices.Equal(installLines(text), want[:]) {
				t.Errorf("%s's first shell block runs %q, want the commands that install %s before and after a release: %q", doc, installLines(text), m.Path, want)
			}
			continue
		}
		need := closure(t, mods, m)
		if b := beforeRelease(m, need); !hasBlock(text, b) {
			t.Errorf("%s lacks the commands that install %s from a checkout:\n```sh\n%s```", doc, m.Path, b)
		}
		if b := afterRelease(m, need); !hasBlock(text, b) {
			t.Errorf("%s lacks the commands that install %s from a release:\n```sh\n%s```", doc, m.Path, b)
		}
		program(t, doc)
		if m.Path == readmeModule {
			readme := readDoc(t, "README.md")
			if b := beforeRelease(m, need); !hasBlock(readme, b) || !hasBlock(install, b) {
				t.Errorf("README.md or docs/install.md lacks the commands that install %s from a checkout:\n```sh\n%s```", m.Path, b)
			}
			if !strings.Contains(readme, "go get "+m.Path+"@latest") {
				t.Errorf("README.md lacks the command that installs %s from a release", m.Path)
			}
		}
	}
}

// TestReleasingSteps checks that the release steps in docs/adapters.md
// tag every published module, and nothing else: the list of tags there
// is the one this test derives from the repository's go.mod files.
func TestReleasingSteps(t *testing.T) {
	var b strings.Builder
	for _, m := range modules(t) {
		b.WriteString("git tag " + m.Tag("vX.Y.Z") + "\n")
	}
	text := readDoc(t, "docs/adapters.md")
	_, releasing, ok := strings.Cut(text, "\n## Releasing\n")
	if !ok {
		t.Fatal(`docs/adapters.md has no section "## Releasing"`)
	}
	// The block is in a list item: compare its lines unindented.
	lines := strings.Split(releasing, "\n")
	for i := range lines {
		lines[i] = strings.TrimLeft(lines[i], " ")
	}
	releasing = strings.Join(lines, "\n")
	if !hasBlock(releasing, b.String()) {
		t.Errorf("the release steps in docs/adapters.md do not tag every published module; want the block\n```sh\n%s```", b.String())
	}
}

// TestExamplesArePublic checks that the example programs of the
// repository's modules, which the docs tell users to copy, import no
// internal package (which a program outside the repository cannot
// import): their stand-ins of the providers live in their tests.
func TestExamplesArePublic(t *testing.T) {
	root := repoRoot(t)
	imp := regexp.MustCompile(`"(github\.com/histrim/history[^"]*/internal(/[^"]*)?)"`)
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bench") {
			return filepath.SkipDir
		}
		rel := filepath.ToSlash(p)
		if d.IsDir() || !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || !strings.Contains(rel, "/examples/") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for _, m := range imp.FindAllStringSubmatch(string(src), -1) {
			r, _ := filepath.Rel(root, p)
			t.Errorf("%s imports %s: a user who copies it cannot build it", filepath.ToSlash(r), m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("found no example program")
	}
}

// TestDocsNameNoMachinePaths checks that the documents speak of the
// repository's files by their paths in it, not by where a development
// machine keeps them (docs/cli.md named the corpus by such a path).
func TestDocsNameNoMachinePaths(t *testing.T) {
	root := repoRoot(t)
	abs := regexp.MustCompile("(^|[\\s(`\"'])/(work|home|root|Users|tmp|var|opt|srv|mnt)/[^\\s)`\"']*")
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, pattern := range []string{"*.md", "*/*/README.md", "examples/*/README.md"} {
		more, _ := filepath.Glob(filepath.Join(root, pattern))
		docs = append(docs, more...)
	}
	if len(docs) < 10 {
		t.Fatalf("found %d documents", len(docs))
	}
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := abs.FindString(line); m != "" {
				rel, _ := filepath.Rel(root, doc)
				t.Errorf("%s:%d names a machine's path: %s", filepath.ToSlash(rel), i+1, strings.TrimSpace(m))
			}
		}
	}
}

// TestReadmeDoor checks that the README's table of the door has a line
// for every published module, linking its README, so that a new module
// is not left out of the first page a user reads.
func TestReadmeDoor(t *testing.T) {
	readme := readDoc(t, "README.md")
	_, door, ok := strings.Cut(readme, "\n## The door\n")
	if !ok {
		t.Fatal(`README.md has no section "## The door"`)
	}
	door, _, _ = strings.Cut(door, "\n## ")
	for _, m := range modules(t) {
		if m.Dir == "." {
			continue
		}
		if !strings.Contains(door, "]("+m.Dir+"/README.md)") {
			t.Errorf("the README's door has no line for %s (a link to %s/README.md)", m.Path, m.Dir)
		}
	}
}
