package main

import (
	"strings"
	"testing"
)

// TestRun: the newcomer's first run trims the shipped transcript, and says
// why the token count before the trim is not known instead of printing a
// bare -1.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"event: ", "the dropped part was never counted", "token math: before not counted (a trim does not count what it drops"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "token math: before -1") {
		t.Errorf("output prints a bare -1:\n%s", s)
	}
}
