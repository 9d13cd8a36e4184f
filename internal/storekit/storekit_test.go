package storekit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/histrim/history"
)

func TestResolve(t *testing.T) {
	got, err := Resolve("x", TTLs{})
	if err != nil || got.Retention != DefaultRetention || got.State != DefaultRetention+StateMargin ||
		got.Recall != got.State || got.Calibration != DefaultCalibrationTTL || got.Timeout != DefaultTimeout {
		t.Fatalf("defaults: %+v %v", got, err)
	}
	got, err = Resolve("x", TTLs{Retention: 5 * time.Minute})
	if err != nil || got.State != 5*time.Minute+StateMargin {
		t.Fatalf("a state outlives the cache by a day: %+v %v", got, err)
	}
	for _, bad := range []TTLs{{Timeout: -1}, {Retention: time.Hour, State: time.Minute}} {
		if _, err := Resolve("x", bad); err == nil || !strings.HasPrefix(err.Error(), "x: ") {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	for range 100 {
		if v := FirstVersion(); v <= 0 {
			t.Fatalf("first version %d", v)
		}
	}
}

// flaky is a KV in memory that can be made to fail: the unit under test
// is the buffer in front of it, not a database.
type flaky struct {
	mu   sync.Mutex
	m    map[string][]byte
	down bool
}

var errDown = errors.New("down")

func (f *flaky) Put(_ context.Context, k string, v []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errDown
	}
	f.m[k] = v
	return nil
}

func (f *flaky) Get(_ context.Context, k string) ([]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, false, errDown
	}
	v, ok := f.m[k]
	return v, ok, nil
}

// TestRecallPending: puts refused are kept up to the limit, read from
// memory, and written at the next call that reaches the backend.
func TestRecallPending(t *testing.T) {
	kv := &flaky{m: map[string][]byte{}}
	r := NewRecall(kv, "x", time.Second)
	r.SetLimit(200)
	s := r.Scope("p:", "conv")
	kv.down = true
	m := history.Message{Role: history.RoleTool, ToolCallID: "c1", Content: strings.Repeat("a", 50)}
	if err := s.Put("h1", m); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("h1", m); err != nil || r.Pending() != 1 {
		t.Fatalf("the same handle twice: %v, %d pending", err, r.Pending())
	}
	if got, ok, err := s.Get(context.Background(), "h1"); err != nil || !ok || got.Content != m.Content {
		t.Fatalf("a pending result: %v %v", ok, err)
	}
	big := history.Message{Role: history.RoleTool, ToolCallID: "c2", Content: strings.Repeat("b", 300)}
	if err := s.Put("h2", big); err == nil || !errors.Is(err, errDown) || !strings.HasPrefix(err.Error(), "x: ") {
		t.Fatalf("past the limit: %v", err)
	}
	kv.down = false
	if _, ok, err := s.Get(context.Background(), "nothing"); ok || err != nil {
		t.Fatalf("an unknown handle: %v %v", ok, err)
	}
	if r.Pending() != 0 || kv.m["p:conv/h1"] == nil {
		t.Fatalf("not flushed: %d pending, %v", r.Pending(), kv.m)
	}
	if _, ok, _ := r.Scope("p:", "other").Get(context.Background(), "h1"); ok {
		t.Fatal("scopes share results")
	}
}
