package release

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/internal/version"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// TestConsumerModule installs every published module in a module of its
// own outside the repository, as a user does from the docs, before and
// after a release, and builds the program its document gives and its
// example programs, copied as a user copies them (their tests left out).
//
// Before the release, the consumer runs the commands of the module's
// document (beforeRelease: a replace of each module it needs with its
// directory in a checkout, here a link to this tree; go get; go mod
// tidy), with the go command's environment as given (its module cache,
// its proxy for the other dependencies), and compiles every package
// (through the tree's own directories, which the build cache knows):
// the consumers of the core and of the go-openai adapter build (link)
// their programs, the others compile them without linking (go list
// -export: a link costs seconds for an SDK's program and fails only
// where the compile does).
//
// After the release, the consumer runs the document's commands that move
// it to the release (afterRelease: drop the replace lines; go get; go mod
// tidy), against a file-based module proxy made of this repository's
// modules at version.Core, in an empty module cache: what a user's go get
// of the release gives, with plain require lines and no replace. It fails
// when a module requires a version of another that the release does not
// tag, when a module's files do not make a module zip, or when its
// packages do not load from it.
//
// A command module (cmd/histrim-gateway) is installed instead, with the
// go install lines of its README, before the release in the checkout and
// after it from the release's proxy, and the installed command must run
// (installCommand).
//
// After each go get, the module's package must load with -mod=readonly:
// a module whose go.mod lacks a module its package imports fails there
// (go mod tidy would add it silently).
//
// The consumers build with the build cache the go command has, which
// holds the SDKs when the modules' own tests or vet ran before (CI). After
// the release (releaseEnv), the consumers of the core and of the
// go-openai adapter build, the others only load their packages: their
// files are the ones compiled before the release, and in a module cache
// of the test's own what the build cache holds was compiled from another
// one (the SDKs of all the modules take minutes to compile anew).
func TestConsumerModule(t *testing.T) {
	if testing.Short() {
		t.Skip("installs every published module in a module of its own")
	}
	if race.Enabled {
		t.Skip("runs without the race detector (CI's release step): it runs go commands, no concurrent code of the project's, and took minutes under -race")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root := repoRoot(t)
	mods := modules(t)
	tmp := t.TempDir()
	// The checkout the commands name, beside the consumers.
	if err := os.Symlink(root, filepath.Join(tmp, filepath.Base(checkout))); err != nil {
		t.Fatal(err)
	}
	proxy := filepath.Join(tmp, "proxy")
	for _, m := range mods {
		publish(t, proxy, module.Version{Path: m.Path, Version: version.Core}, filepath.Join(root, filepath.FromSlash(m.Dir)))
	}

	// The go command as a user runs it: no workspace, no flags (but
	// buildFlags'); and after the release, with the release's proxy
	// (releaseEnv).
	before := withEnv(os.Environ(), "GOWORK=off", "GOFLAGS="+buildFlags())
	after := releaseEnv(t, goBin, tmp, proxy, before)

	for _, m := range mods {
		name := m.Dir
		if name == "." {
			name = "core"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if command(m.Dir) {
				installCommand(t, goBin, root, tmp, m, before, after)
				return
			}
			need := closure(t, mods, m)
			app := filepath.Join(tmp, "app-"+strings.ReplaceAll(name, "/", "-"))
			write(t, filepath.Join(app, "main.go"), program(t, docOf(m)))
			copyExamples(t, filepath.Join(root, filepath.FromSlash(m.Dir), "examples"), filepath.Join(app, "examples"))
			run(t, goBin, app, before, "mod", "init", "example.com/app")
			// What go get of the module gives builds its package: its go.mod
			// requires every module that package imports.
			loads := func(env []string) {
				run(t, goBin, app, env, "list", "-mod=readonly", "-deps", m.Path)
			}

			commands(t, goBin, app, before, beforeRelease(m, need), loads)
			// The same files compile through the tree's own directories
			// rather than the link the docs' relative replace lines name:
			// the build cache keys a package by its directory, and so
			// finds what the modules' own test runs compiled (in CI, 40 s
			// of compiles the link's directories made again).
			edit := []string{"mod", "edit"}
			for _, x := range need {
				edit = append(edit, "-replace="+x.Path+"="+filepath.Join(root, filepath.FromSlash(x.Dir)))
			}
			run(t, goBin, app, before, edit...)
			if buildAfter[m.Dir] {
				run(t, goBin, app, before, "build", "./...")
			} else {
				// Every package compiles, the program and the examples
				// too, without a link (see the doc comment).
				run(t, goBin, app, before, "list", "-mod=readonly", "-export", "-deps", "./...")
			}

			commands(t, goBin, app, after, afterRelease(m, need), loads)
			gomod, err := os.ReadFile(filepath.Join(app, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(gomod), "replace") {
				t.Fatalf("the consumer's go.mod still replaces a module:\n%s", gomod)
			}
			for _, x := range need {
				if v := strings.TrimSpace(run(t, goBin, app, after, "list", "-m", "-f", "{{.Version}}", x.Path)); v != version.Core {
					t.Errorf("the consumer got %s %s from the release's proxy, want %s", x.Path, v, version.Core)
				}
			}
			if buildAfter[m.Dir] {
				run(t, goBin, app, after, "build", "-o", os.DevNull, ".")
			} else {
				// Every package loads from the release's files: a package,
				// an embedded file or a requirement its zip lacks fails
				// here. The files are the ones compiled before the release
				// (a zip leaves out only dot directories and nested
				// modules, which no package of the module builds from), so
				// compiling them again from the module cache found nothing
				// new for 60 s of CI's time.
				run(t, goBin, app, after, "list", "-mod=readonly", "-deps", "./...")
			}
		})
	}
}

// installCommand runs the go install lines of the README of the command
// module m (installCommands), as TestCommandInstall runs docs/cli.md's
// for cmd/histrim: the first in the checkout at root, with the go
// command's environment as given (before, but the workspace the checkout
// has: the module's own go.work), the second anywhere with after's (the
// release's proxy in an empty module cache, tmp's). Each must leave a
// command that runs (-h, which names -store).
func installCommand(t *testing.T, goBin, root, tmp string, m mod, before, after []string) {
	lines := installLines(readDoc(t, docOf(m)))
	if want := installCommands(m); !slices.Equal(lines, want[:]) {
		t.Fatalf("%s installs with %q, want %q", docOf(m), lines, want)
	}
	name := path.Base(m.Dir)
	for i, env := range [][]string{withEnv(before, "GOWORK="), after} {
		dir := root // in the checkout
		if i == 1 {
			dir = tmp // anywhere
		}
		gobin := filepath.Join(tmp, "bin-"+name, []string{"before", "after"}[i])
		commands(t, goBin, dir, withEnv(env, "GOBIN="+gobin), lines[i], nil)
		out, err := exec.Command(filepath.Join(gobin, name), "-h").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "-store") {
			t.Errorf("%s: %s -h: %v\n%s", lines[i], name, err, out)
		}
	}
}

// TestCommandInstall runs the commands of docs/cli.md that install the
// histrim command: go install in a checkout before the release, and go
// install of the package at the latest version after it (from a
// file-based module proxy made of the core at version.Core, in an empty
// module cache); each must leave a histrim that runs.
func TestCommandInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command twice")
	}
	if race.Enabled {
		t.Skip("runs without the race detector (CI's release step): it runs go commands, no concurrent code of the project's")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	_, text, _ := strings.Cut(readDoc(t, "docs/cli.md"), "```sh\n")
	text, _, _ = strings.Cut(text, "```")
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "go install ") {
			lines = append(lines, line)
		}
	}
	want := []string{"./cmd/histrim", corePath + "/cmd/histrim@latest"}
	if len(lines) != 2 || !strings.Contains(lines[0], " "+want[0]+" ") || !strings.Contains(lines[1], " "+want[1]+" ") {
		t.Fatalf("docs/cli.md's first block installs with %q, want go install %s (before the release) and go install %s (after it)", lines, want[0], want[1])
	}
	root := repoRoot(t)
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	publish(t, proxy, module.Version{Path: corePath, Version: version.Core}, root)
	after := releaseEnv(t, goBin, tmp, proxy, withEnv(os.Environ(), "GOWORK=off"))
	for i, env := range [][]string{
		withEnv(os.Environ(), "GOFLAGS="+buildFlags(), "GOBIN="+filepath.Join(tmp, "before")),
		withEnv(after, "GOBIN="+filepath.Join(tmp, "after")),
	} {
		dir := root // in the checkout
		if i == 1 {
			dir = tmp // anywhere
		}
		commands(t, goBin, dir, env, lines[i], nil)
		bin := filepath.Join(tmp, []string{"before", "after"}[i], "histrim")
		out, err := exec.Command(bin, "-budget", "900", filepath.Join(root, "cmd", "histrim", "testdata", "chat.jsonl")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "dropped 2 turns") {
			t.Errorf("%s: %v\n%s", lines[i], err, out)
		}
	}
}

// releaseEnv returns env as the go command has it after the release:
// the release's proxy (the file-based module proxy at proxy) first, then
// the module cache's downloads and the go command's own proxy for the
// other dependencies.
//
// By default the module cache is an empty one under tmp (writable, so
// that the test can remove it), and the build is -trimpath, so that what
// it compiles does not depend on that cache's path and the build cache
// keeps it for the next run; but everything it builds is compiled anew,
// the standard library too (six minutes of CPU time for histrim-gateway's
// SDKs on a CI machine).
//
// With HISTRIM_RELEASE_MODCACHE=shared (CI, whose module cache is its
// own and thrown away), it is the go command's module cache, as a user's
// go get of the release finds it: the other dependencies are the files
// the repository's own builds compiled, so the build cache holds them and
// only the release's modules compile. The release's modules must not be
// in that cache before (they would be tested instead of this tree), and
// they are removed from it when the test ends. The go
// command's module index is off in this mode (GODEBUG=goindex=0): it
// keeps what each package in the module cache imports in the build
// cache, keyed by the module's directory, as a published version never
// changes; but this test publishes version.Core of every tree it tests,
// so a build cache kept from a run of an older tree (CI's is) would give
// the older tree's imports (a package added since is left out of the
// compile: "could not import ... (open : no such file or directory)").
func releaseEnv(t *testing.T, goBin, tmp, proxy string, env []string) (after []string) {
	t.Helper()
	cache := strings.TrimSpace(goEnv(t, goBin, "GOMODCACHE"))
	proxies := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(cache, "cache", "download"))
	if p := strings.TrimSpace(goEnv(t, goBin, "GOPROXY")); p != "" && p != "off" {
		proxies += "," + p
	}
	env = withEnv(env, "GOPROXY="+proxies, "GONOSUMDB="+corePath)
	switch mode := os.Getenv("HISTRIM_RELEASE_MODCACHE"); mode {
	case "":
		return withEnv(env, "GOFLAGS="+strings.TrimSpace("-modcacherw -trimpath "+buildFlags()), "GOMODCACHE="+filepath.Join(tmp, "modcache"))
	case "shared":
	default:
		t.Fatalf("HISTRIM_RELEASE_MODCACHE=%q: want shared or nothing", mode)
	}
	owner := path.Dir(corePath) // github.com/histrim: every module of the release
	dirs := []string{filepath.Join(cache, filepath.FromSlash(owner)), filepath.Join(cache, "cache", "download", filepath.FromSlash(owner))}
	for _, d := range dirs {
		// A go command that looked for a release leaves lock files; any
		// other file is a module the cache holds.
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() && !strings.HasSuffix(p, ".lock") {
				t.Fatalf("HISTRIM_RELEASE_MODCACHE=shared: the module cache already holds %s: its modules would be tested instead of this tree's (remove it, or unset HISTRIM_RELEASE_MODCACHE)", p)
			}
			return nil
		})
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			if err := os.RemoveAll(d); err != nil {
				t.Errorf("removing the release's modules from the module cache: %v", err)
			}
		}
	})
	godebug := "goindex=0"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	return withEnv(env, "GOFLAGS="+strings.TrimSpace("-modcacherw "+buildFlags()), "GOMODCACHE="+cache, "GODEBUG="+godebug)
}

// buildFlags returns the build flags that every go command of the
// consumers adds, from HISTRIM_RELEASE_GOFLAGS (none by default). CI sets
// its own flags and -race: its other steps compile the SDKs and
// frameworks under the race detector only, and a consumer built so finds
// them compiled; the commands check the same (that every package
// installs and compiles) in either configuration.
func buildFlags() string {
	return strings.TrimSpace(os.Getenv("HISTRIM_RELEASE_GOFLAGS"))
}

// copyExamples copies the example programs of a module, in the
// directories under dir, to the directories of the same names under to:
// their files but the tests, as a user copies them.
func copyExamples(t *testing.T, dir, to string) {
	t.Helper()
	progs, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, prog := range progs {
		files, _ := filepath.Glob(filepath.Join(prog, "*"))
		for _, f := range files {
			if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() || strings.HasSuffix(f, "_test.go") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(to, filepath.Base(prog), filepath.Base(f)), string(data))
		}
	}
}

// buildAfter are the modules whose consumers build after the release in
// a module cache of their own, by directory: the core, and an adapter
// whose SDK compiles in seconds.
var buildAfter = map[string]bool{".": true, "adapters/goopenai": true}

// commands runs the shell commands of block in dir, as the docs give
// them: lines joined where they end in a backslash, comments and the
// checkout's git clone (the test links the tree in its place) left out,
// and every other command a go command. After each go get it calls
// afterGet, when it is not nil.
func commands(t *testing.T, goBin, dir string, env []string, block string, afterGet func(env []string)) {
	t.Helper()
	var cmds []string
	var cur strings.Builder
	for _, line := range strings.Split(block, "\n") {
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ') {
			line = strings.TrimRight(line[:i], " ") // a comment
		}
		if more, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(line)
		if s := strings.TrimSpace(cur.String()); s != "" {
			cmds = append(cmds, s)
		}
		cur.Reset()
	}
	for _, c := range cmds {
		args := strings.Fields(c)
		switch {
		case args[0] == "git" && args[1] == "clone" && args[len(args)-1] == checkout:
			continue
		case args[0] != "go":
			t.Fatalf("the docs' command %q is not a go command", c)
		}
		run(t, goBin, dir, env, args[1:]...)
		if args[1] == "get" && afterGet != nil {
			afterGet(env)
		}
	}
}

// run runs the go command with args in dir and returns its output; it
// fails the test if the command fails.
func run(t *testing.T, goBin, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("go %s in the consumer module: %v\n%s%s", strings.Join(args, " "), err, out.String(), stderr.String())
	}
	return out.String()
}

// withEnv returns env with the settings kv (KEY=value) in place of those
// of the same keys.
func withEnv(env []string, kv ...string) []string {
	out := slices.Clone(env)
	for _, s := range kv {
		key, _, _ := strings.Cut(s, "=")
		out = slices.DeleteFunc(out, func(e string) bool { return strings.HasPrefix(e, key+"=") })
		out = append(out, s)
	}
	return out
}

// publish writes module m, whose files are in dir, to the file-based
// module proxy at proxy: its version list, .info, .mod and .zip.
func publish(t *testing.T, proxy string, m module.Version, dir string) {
	t.Helper()
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": m.Version, "Time": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	write(t, filepath.Join(at, "list"), m.Version+"\n")
	write(t, filepath.Join(at, m.Version+".info"), string(info))
	write(t, filepath.Join(at, m.Version+".mod"), string(mod))
	f, err := os.Create(filepath.Join(at, m.Version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := modzip.Create(f, m, moduleFiles(t, dir)); err != nil {
		t.Fatalf("%s: %v", m.Path, err)
	}
}

// moduleFiles lists the files of the module in dir as a release would
// hold them: regular files, without nested modules and without dot
// directories (the VCS's, CI's). A release is made from the repository
// at a tag, so in a git work tree only the files git would commit are
// listed (tracked ones and new ones it does not ignore, as they are in
// the tree): not what the steps before the test left in the tree, which
// git ignores (CI's npm clients of the gateway's end-to-end test,
// 11,000 files and 116 MB that took 5 s to zip and 14 s to unzip for
// every module that requires the core). Elsewhere (a tree without git),
// every file.
func moduleFiles(t *testing.T, dir string) []modzip.File {
	t.Helper()
	var files []modzip.File
	keep := func(rel string) bool {
		name := path.Base(rel)
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "go.work") {
			return false
		}
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			if strings.HasPrefix(path.Base(d), ".") || exists(filepath.Join(dir, filepath.FromSlash(d), "go.mod")) {
				return false
			}
		}
		return true
	}
	if out, err := exec.Command("git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".").Output(); err == nil {
		for _, rel := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			full := filepath.Join(dir, filepath.FromSlash(rel))
			if fi, err := os.Lstat(full); rel == "" || err != nil || !fi.Mode().IsRegular() || !keep(rel) {
				continue // (deleted from the tree, a link, or not the module's)
			}
			files = append(files, file{path: rel, full: full})
		}
		return files
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || exists(filepath.Join(p, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if rel := filepath.ToSlash(rel); d.Type().IsRegular() && keep(rel) {
			files = append(files, file{path: rel, full: p})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// file is a module file on disk.
type file struct{ path, full string }

func (f file) Path() string                 { return f.path }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.full) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.full) }

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func goEnv(t *testing.T, goBin, key string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", key).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
