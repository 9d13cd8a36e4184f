package history

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines is the most lines a file of the package (tests aside) may
// have: a file owns one thing, and a reader takes it in at a sitting.
const maxFileLines = 450

// TestFileSizes holds every non-test file of the package to maxFileLines.
func TestFileSizes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(data, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split what it owns", f, n, maxFileLines)
		}
	}
}
