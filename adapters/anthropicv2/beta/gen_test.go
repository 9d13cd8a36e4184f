package beta

import (
	"go/format"
	"os"
	"os/exec"
	"testing"
)

// TestGenerated: api.go, sdk.go and summarizer.go are the GA package's
// files with the SDK's types renamed to their beta twins (gen.go), so the
// logic exists once. Run go generate after changing any of them.
func TestGenerated(t *testing.T) {
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skip("sed not found")
	}
	for _, name := range []string{"api.go", "sdk.go", "summarizer.go"} {
		renamed, err := exec.Command("sed", "-f", "rename.sed", "../"+name).Output()
		if err != nil {
			t.Fatal(err)
		}
		want, err := format.Source(renamed)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is not the GA package's %s renamed: run go generate in beta", name, name)
		}
	}
}
