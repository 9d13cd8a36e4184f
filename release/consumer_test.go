package release

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/histrim/history/internal/version"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// published are the modules a release tags, by their directory in the
// repository.
var published = map[string]string{
	"github.com/histrim/history":                      ".",
	"github.com/histrim/history/adapters/anthropic":   "adapters/anthropic",
	"github.com/histrim/history/adapters/eino":        "adapters/eino",
	"github.com/histrim/history/adapters/gemini":      "adapters/gemini",
	"github.com/histrim/history/adapters/langchaingo": "adapters/langchaingo",
	"github.com/histrim/history/adapters/openai":      "adapters/openai",
	"github.com/histrim/history/adapters/responses":   "adapters/responses",
}

// consumer is a program that imports the core and the openai adapter; the
// others are imported by every.go, which the test loads but does not
// compile (their SDKs would take minutes to build in an empty module
// cache).
const consumer = `package main

import (
	"fmt"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/openai/openai-go/v3"
)

func main() {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")}
	out, res, err := hopenai.Trim(msgs, 1000, history.WithStepTrim())
	fmt.Println(len(out), res.TokensAfter > 0, err)
}
`

// TestConsumerModule builds a consumer module that requires the core and
// every adapter at version.Core with plain require lines, resolved from a
// file-based module proxy made of this repository's modules (the other
// dependencies come from the local module cache, or the proxy configured
// for the go command when it lacks one), with no workspace and no replace:
// what a user's `go get` of a release gives. It fails when an adapter
// requires a core version that is not the release (a placeholder, which
// no proxy serves), or when a published module does not build on its own.
func TestConsumerModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every module from a proxy")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	for path, dir := range published {
		publish(t, proxy, module.Version{Path: path, Version: version.Core}, filepath.Join(root, dir))
	}

	app := filepath.Join(tmp, "consumer")
	write(t, filepath.Join(app, "main.go"), consumer)
	every := "package every\n\nimport (\n"
	for path := range published {
		every += "\t_ \"" + path + "\"\n"
	}
	write(t, filepath.Join(app, "every", "every.go"), every+")\n")
	var req strings.Builder
	for path := range published {
		req.WriteString("\t" + path + " " + version.Core + "\n")
	}
	write(t, filepath.Join(app, "go.mod"), "module example.com/consumer\n\ngo 1.24\n\nrequire (\n"+req.String()+")\n")

	cache := strings.TrimSpace(goEnv(t, goBin, "GOMODCACHE"))
	proxies := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(cache, "cache", "download"))
	if p := strings.TrimSpace(goEnv(t, goBin, "GOPROXY")); p != "" && p != "off" {
		proxies += "," + p
	}
	env := append(os.Environ(), "GOWORK=off", "GOPROXY="+proxies, "GOSUMDB=off", "GONOSUMDB=github.com/histrim",
		"GOFLAGS=-mod=mod -modcacherw -trimpath", "GOMODCACHE="+filepath.Join(tmp, "modcache"), "GOTOOLCHAIN=local")
	run := func(args ...string) string {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = app, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("go %s in the consumer module: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// Every adapter's packages resolve and load from the published
	// modules alone; the core and one adapter build and run.
	run("list", "-deps", "./every")
	out := run("run", ".")
	if got := strings.TrimSpace(lastLine(out)); got != "2 true <nil>" {
		t.Fatalf("the consumer printed %q, want %q", got, "2 true <nil>")
	}
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
		t.Fatal(err)
	}
}

// moduleFiles lists the files of the module in dir as a release would
// hold them: regular files, without nested modules and without dot
// directories (the VCS's, CI's).
func moduleFiles(t *testing.T, dir string) []modzip.File {
	t.Helper()
	var files []modzip.File
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
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") && !strings.HasPrefix(d.Name(), "go.work") {
			files = append(files, file{path: filepath.ToSlash(rel), full: p})
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

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
