package release

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestWorkspaceVersions holds every module of the workspace (go.work at
// the root: the core, the adapters) to the versions its tests run with:
// each package a module builds (its examples too, as a consumer copies
// them) comes from the same version of its module when the module is
// built on its own, with the core alone beside it (what a user's go get
// of the module selects, TestConsumerModule), as in the workspace, where
// every module's requirements raise the others' (go.work: the versions
// CI tests and vets every adapter with).
//
// A module whose go.mod requires less than the workspace selects gives
// its users versions no test ran with, and CI compiles its SDK's tree a
// second time for the release test (the Gemini adapter's gRPC and
// protobuf, the Anthropic adapter's OpenTelemetry: some 125 s of a clean
// machine's CI on 2026-11-29). The fix the failure names raises the
// module's requirement; its go.mod stays tidy.
func TestWorkspaceVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every workspace module's packages with the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	work, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	abs := func(dir string) string {
		if filepath.IsAbs(dir) {
			return dir
		}
		return filepath.Join(root, filepath.FromSlash(dir))
	}
	var patterns, dirs []string
	for _, u := range work.Use {
		dir := abs(u.Path)
		gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		patterns = append(patterns, modfile.ModulePath(gomod)+"/...")
		if dir != root && published(filepath.ToSlash(mustRel(t, root, dir))) {
			dirs = append(dirs, dir)
		}
	}
	// The module of every package the workspace's tests build, at the
	// version the workspace selects.
	env := os.Environ()
	want := buildList(t, goBin, root, env, append([]string{"-test"}, patterns...)...)
	for _, dir := range dirs {
		rel := filepath.ToSlash(mustRel(t, root, dir))
		t.Run(rel, func(t *testing.T) {
			// The module with the core beside it, as a consumer's go.mod
			// has them: go.work's replacements, no other module.
			var alone strings.Builder
			fmt.Fprintf(&alone, "go %s\n\nuse (\n\t%q\n\t%q\n)\n", work.Go.Version, root, dir)
			for _, r := range work.Replace {
				fmt.Fprintf(&alone, "replace %s %s => %q %s\n", r.Old.Path, r.Old.Version, abs(r.New.Path), r.New.Version)
			}
			gowork := filepath.Join(t.TempDir(), "go.work")
			if err := os.WriteFile(gowork, []byte(alone.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			got := buildList(t, goBin, dir, append(env, "GOWORK="+gowork), "./...")
			var wrong []string
			for p, v := range got {
				if w, ok := want[p]; ok && w != v {
					wrong = append(wrong, p+"@"+w+" (alone: "+v+")")
				} else if !ok {
					wrong = append(wrong, p+"@"+v+" (not built by the workspace's tests)")
				}
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				t.Errorf("built on its own, %s selects other versions than the workspace for %d modules its packages build: %s\n"+
					"raise its requirements to the workspace's (go mod edit -require=path@version in %s, then go mod tidy with the core replaced by ../..)",
					rel, len(wrong), strings.Join(wrong, ", "), rel)
			}
		})
	}
}

// buildList returns the module path and version of every package that
// go list -deps lists for args in dir, but the repository's own.
func buildList(t *testing.T, goBin, dir string, env []string, args ...string) map[string]string {
	t.Helper()
	// Without version control stamping, whatever GOFLAGS says: stamping
	// a listing of the core's packages as a workspace module records the
	// checkout's pseudo-version in the module cache, which
	// TestConsumerModule then refuses to run over (HISTRIM_RELEASE_MODCACHE).
	cmd := exec.Command(goBin, append([]string{"list", "-mod=readonly", "-buildvcs=false", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if e, ok := err.(*exec.ExitError); ok {
			msg = string(e.Stderr)
		}
		t.Fatalf("go list -deps %s in %s: %v\n%s", strings.Join(args, " "), dir, err, msg)
	}
	list := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		p, v, _ := strings.Cut(line, " ")
		if p != "" && p != corePath && !strings.HasPrefix(p, corePath+"/") {
			list[p] = v
		}
	}
	return list
}

func mustRel(t *testing.T, base, target string) string {
	t.Helper()
	rel, err := filepath.Rel(base, target)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
