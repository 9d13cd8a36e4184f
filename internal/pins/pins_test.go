package pins_test

import (
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/pins"
)

func TestRead(t *testing.T) {
	if got := pins.Read([]history.Option{history.WithCounter(nil)}); got != nil {
		t.Fatalf("no pins: got %v", got)
	}
	got := pins.Read([]history.Option{history.WithPin(4, 1, 4), nil, history.WithPin(7, 2)})
	if len(got) != 2 || got[0] != 2 || got[1] != 7 {
		t.Fatalf("got %v, want [2 7] (the later WithPin replaces the earlier)", got)
	}
}
