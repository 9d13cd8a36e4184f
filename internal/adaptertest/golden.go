package adaptertest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/histrim/history/internal/race"
)

// Golden checks the outputs of a golden test: got holds a hash per group,
// names the groups in the order they ran. With update it writes them to
// the file at path instead (header its first line, a comment) and checks
// nothing; otherwise each group's hash must be the one the file pins, and
// the file must pin no group the run did not reach, except under the race
// detector, which reads fewer corpus sessions (Corpus).
func Golden(t *testing.T, path, header string, names []string, got map[string]string, update bool) {
	t.Helper()
	if update {
		var b strings.Builder
		b.WriteString("# " + header + "\n")
		for _, n := range names {
			b.WriteString(n + " " + got[n] + "\n")
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readGolden(t, path)
	for _, n := range names {
		if w, ok := want[n]; !ok {
			t.Errorf("%s: not in %s (run with -update)", n, path)
		} else if w != got[n] {
			t.Errorf("%s: outputs differ from the pinned ones", n)
		}
	}
	if len(want) != len(names) && !race.Enabled {
		t.Errorf("%d groups pinned, %d run", len(want), len(names))
	}
}

// readGolden reads the hashes the file at path pins, by group: a line
// each, the group's name, a space and its hash; lines starting with #
// and empty lines aside.
func readGolden(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("%s: line %q has no hash", path, line)
		}
		want[line[:i]] = line[i+1:]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}
