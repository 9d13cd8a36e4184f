package storetest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/histrim/history"
)

// testUnreadable: a value the backend cannot read as a state and a
// version is refused (Load: nil, -1, ErrInvalidState), replaced only by a
// save at version -1 while it is still unreadable, and, under
// Conversations, reported as refused once and repaired by the next save;
// the same for a model's Calibration.
func testUnreadable(t *testing.T, b Backend) {
	if len(b.Corruptions) == 0 {
		t.Skip("the backend names no corruption")
	}
	ctx := context.Background()
	for _, c := range b.Corruptions {
		t.Run(c.Name, func(t *testing.T) {
			ns := Namespace()
			s := b.Open(t, b.Addr, ns, 0)
			if !c.Readable {
				c.Write(t, ns, "state", "k")
				data, v, err := s.Load(ctx, "k")
				if data != nil || v != -1 || !errors.Is(err, history.ErrInvalidState) || !strings.HasPrefix(err.Error(), b.Name+":") {
					t.Fatalf("Load: %q, version %d, %v; want nil, -1 and an error wrapping ErrInvalidState", data, v, err)
				}
				for _, stale := range []int64{0, 1, 5} {
					if _, err := s.Save(ctx, "k", []byte("lost"), stale); !errors.Is(err, history.ErrStateConflict) {
						t.Fatalf("a save at version %d over an unreadable value: %v, want a conflict", stale, err)
					}
				}
				v1, err := s.Save(ctx, "k", []byte("mine"), -1)
				must(t, err)
				if v1 <= 0 {
					t.Fatalf("the repair returned version %d", v1)
				}
				if _, err := s.Save(ctx, "k", []byte("lost"), -1); !errors.Is(err, history.ErrStateConflict) {
					t.Fatalf("a second repair over a readable value: %v, want a conflict", err)
				}
				data, v, err = s.Load(ctx, "k")
				must(t, err)
				if v != v1 || string(data) != "mine" {
					t.Fatalf("after the repair: %q at %d, want \"mine\" at %d", data, v, v1)
				}
				if v2, err := s.Save(ctx, "k", []byte("next"), v1); err != nil || v2 <= 0 || v2 == v1 {
					t.Fatalf("a save after the repair: %d, %v", v2, err)
				}
			}

			// Under Conversations: refused once, then this replica's own.
			full := Session(12, 3)
			reqs := Requests(full)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			convs := history.NewConversations(s, triggerPolicy(s.Recall(""), func() time.Time { return now }, nil)...)
			var states []string
			convs.OnState = func(_, state string) { states = append(states, state) }
			elided := map[string]string{}
			const at = 6
			for i, req := range reqs {
				if i == at {
					c.Write(t, ns, "state", "conv")
				}
				now = now.Add(time.Minute)
				res, err := convs.Trim(ctx, "conv", req, budget)
				checkRequest(t, i, req, res, err, elided)
			}
			if states[at] != history.StateRefused {
				t.Fatalf("request %d over %s: state %q, want refused (states %v)", at, c.Name, states[at], states)
			}
			for i := at + 1; i < len(states); i++ {
				if states[i] != history.StateLocal {
					t.Fatalf("request %d after the repair: state %q, want local (states %v)", i, states[i], states)
				}
			}

			// A model's Calibration.
			_, err := s.ObserveShared(ctx, "m", 1000, 1100)
			must(t, err)
			c.Write(t, ns, "calibration", "m")
			var cal history.Calibration
			if err := s.LoadCalibration(ctx, "m", &cal); !errors.Is(err, history.ErrInvalidCalibration) {
				t.Fatalf("LoadCalibration over %s: %v, want ErrInvalidCalibration", c.Name, err)
			}
			if v, err := s.ObserveShared(ctx, "m", 1000, 1200); err != nil || v != history.VerdictUsed {
				t.Fatalf("observing over %s: %v %v", c.Name, v, err)
			}
			must(t, s.LoadCalibration(ctx, "m", &cal))
			if scale, _, _, ok := cal.Model(); !ok || scale < 1.19 || scale > 1.21 {
				t.Fatalf("the replaced calibration: scale %v, %v", scale, ok)
			}
		})
	}
}

// hostileKeys are keys a caller can pass that a backend may not store as
// they are, each with why it is here.
var hostileKeys = []struct{ key, why string }{
	{"", "empty"},
	{"a\x00b", "a NUL (PostgreSQL text cannot hold one)"},
	{"a\x00c", "the same with another byte after the NUL"},
	{"\xff\xfe\xfd", "not UTF-8"},
	{"\xff\xfe\xfc", "not UTF-8, another"},
	{strings.Repeat("k", 10_000), "10 KB (over a PostgreSQL index entry)"},
	{strings.Repeat("k", 9_999) + "j", "10 KB, differing in the last byte"},
	{strings.Repeat("é", 3_000), "6 KB of two-byte runes"},
	{"~sha256:0000000000000000000000000000000000000000000000000000000000000000", "what a hashed key could look like"},
	{"a/b", "a '/' (a scope's separator)"},
	{"a%2Fb", "the escaped form of a/b"},
	{"conv/ü:1 *?[x]{}", "glob and hash-tag characters"},
	{"'; DROP TABLE x; --", "SQL"},
}

// testHostileKeys: every key works, for states, calibrations and recall
// scopes, and keys stay apart.
func testHostileKeys(t *testing.T, b Backend) {
	ctx := context.Background()
	ns := Namespace()
	s := b.Open(t, b.Addr, ns, 0)
	other := b.Open(t, b.Addr, ns, 0)
	versions := map[string]int64{}
	for _, k := range hostileKeys {
		v, err := s.Save(ctx, k.key, []byte("state of "+k.why), 0)
		if err != nil {
			t.Fatalf("saving under a key %s: %v", k.why, err)
		}
		versions[k.key] = v
	}
	for _, k := range hostileKeys {
		data, v, err := other.Load(ctx, k.key)
		if err != nil || v != versions[k.key] || string(data) != "state of "+k.why {
			t.Fatalf("loading the key %s: %q at %d, %v", k.why, data, v, err)
		}
		if _, err := s.Save(ctx, k.key, []byte("again"), versions[k.key]); err != nil {
			t.Fatalf("saving again under the key %s: %v", k.why, err)
		}
	}
	for i, k := range hostileKeys {
		m := history.Message{Role: history.RoleTool, ToolCallID: "c", Content: "result of " + k.why}
		h := history.ElisionHandle(m)
		must(t, s.Recall(k.key).Put(h, m))
		must(t, s.Flush(ctx))
		stores := []history.Store{other.Recall(k.key)}
		if k.key != "" { // Recall("") is unscoped; ScopeStore(s, "") is the scope ""
			stores = append(stores, history.ScopeStore(other.Recall(""), k.key))
		}
		for _, st := range stores {
			got, ok, err := st.Get(ctx, h)
			if err != nil || !ok || got.Content != m.Content {
				t.Fatalf("recalling in the scope %s: %q %v %v", k.why, got.Content, ok, err)
			}
		}
		next := hostileKeys[(i+1)%len(hostileKeys)].key
		if _, ok, err := other.Recall(next).Get(ctx, h); ok || err != nil {
			t.Fatalf("the scope %q reads the result of the scope %s: %v", next, k.why, err)
		}
		if _, err := s.ObserveShared(ctx, k.key, 1000, 1100+i); err != nil {
			t.Fatalf("a calibration for the model %s: %v", k.why, err)
		}
	}
	for i, k := range hostileKeys {
		var cal history.Calibration
		must(t, other.LoadCalibration(ctx, k.key, &cal))
		data, _ := cal.MarshalJSON()
		if !strings.Contains(string(data), "[[1000,"+strconv.Itoa(1100+i)+"]]") {
			t.Fatalf("the calibration of the model %s: %s", k.why, data)
		}
	}
	// Under Conversations: saved and reused, never "unavailable".
	full := Session(4, 1)
	fresh := b.Open(t, b.Addr, Namespace(), 0)
	for _, k := range hostileKeys[1:6] {
		convs := history.NewConversations(fresh, history.WithLowWater(0.7))
		var states []string
		convs.OnState = func(_, state string) { states = append(states, state) }
		for i, req := range Requests(full) {
			res, err := convs.Trim(ctx, k.key, req, budget)
			checkRequest(t, i, req, res, err, map[string]string{})
		}
		for i, st := range states {
			if want := history.StateLocal; i == 0 && st != history.StateNew || i > 0 && st != want {
				t.Fatalf("a conversation keyed %s: states %v", k.why, states)
			}
		}
	}
}

// testNestedScopes: a scope's recall store never reads another's results,
// whatever the keys (one the start of the other, an id naming a path),
// and a scope of the store is the core's ScopeStore of its unscoped store.
func testNestedScopes(t *testing.T, b Backend) {
	ctx := context.Background()
	ns := Namespace()
	s := b.Open(t, b.Addr, ns, 0)
	m := history.Message{Role: history.RoleTool, ToolCallID: "c9", Name: "read_file", Content: "user2's secret"}
	h := history.ElisionHandle(m)
	must(t, s.Recall("tenant1/user2").Put(h, m))
	must(t, s.Flush(ctx))
	parents := map[string]history.Store{
		"Recall(tenant1)":                s.Recall("tenant1"),
		"ScopeStore(Recall(), tenant1)":  history.ScopeStore(s.Recall(""), "tenant1"),
		"Recall(tenant1%2Fuser2)":        s.Recall("tenant1%2Fuser2"),
		"Recall()":                       s.Recall(""),
		"ScopeStore(Recall(), tenant1/)": history.ScopeStore(s.Recall(""), "tenant1/"),
	}
	for name, st := range parents {
		for _, id := range []string{h, "user2/" + h, "tenant1/user2/" + h, "tenant1%2Fuser2/" + h, "../" + h} {
			// The unscoped store holds every conversation's results under
			// the names ScopeStore gives them (it is Conversations' own,
			// never a recall tool's): it alone reads the escaped name.
			if _, ok, err := st.Get(ctx, id); (ok != (name == "Recall()" && id == "tenant1%2Fuser2/"+h)) || err != nil {
				t.Fatalf("%s reads %q: %v %v", name, id, ok, err)
			}
			if _, err := history.RecallContext(ctx, st, `{"id":"`+id+`"}`); !errors.Is(err, history.ErrUnknownHandle) {
				t.Fatalf("%s's recall tool given %q: %v, want ErrUnknownHandle", name, id, err)
			}
		}
	}
	for _, st := range []history.Store{s.Recall("tenant1/user2"), history.ScopeStore(s.Recall(""), "tenant1/user2")} {
		text, err := history.RecallContext(ctx, st, `{"id":"`+h+`"}`)
		if err != nil || text != m.Content {
			t.Fatalf("the scope itself: %q %v", text, err)
		}
	}
	for _, bad := range []string{"user2//" + h, "/" + h, "x", h + "/"} {
		if err := s.Recall("tenant1").Put(bad, m); err == nil {
			t.Fatalf("a Put under %q, a name no ScopeStore makes, succeeded", bad)
		}
	}
}
