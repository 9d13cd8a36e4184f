package responses

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/bytecache"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/internal/wireapi"
	hwire "github.com/histrim/history/wire"
)

// memoBody is a Responses body whose items no other test sends (the
// wire's memo is the package's): a tool loop of reasoning, calls and
// outputs, some outputs large enough to be elided.
func memoBody(tag string, turns int) (params json.RawMessage, items []json.RawMessage) {
	body := strings.ReplaceAll(wireLoopBody(turns, 3, 60, ""), "line of code", "memo "+tag+" line")
	r, err := hwire.Parse("/v1/responses", []byte(body))
	if err != nil {
		panic(err)
	}
	return r.Body([]json.RawMessage{}), r.Messages()
}

// TestWireKeepsReads: the codec RegisterWire registers keeps what it read
// of each item, and what it rewrote an elided output to, by the item's
// bytes: a transcript resent costs under half the allocations of the
// plain codec, which reads every item through its JSON and re-encodes
// every output it elides on every request (before the memo, the two were
// the same: some 3,850 allocations each here; now some 830), and sends
// the same bytes.
func TestWireKeepsReads(t *testing.T) {
	params, items := memoBody("keeps", 12)
	opts := []history.Option{history.WithElision(history.ElideOptions{}), history.WithOverhead(30)}
	const budget = 4_000
	trim := func(c *wireapi.Codec) []json.RawMessage {
		out, res, err := c.Trim(params, items, budget, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.ElidedResults == 0 {
			t.Fatal("nothing elided: the trim shows nothing")
		}
		return out
	}
	want, got := trim(plainRaw), trim(rawCodec) // the first request reads every item
	if !sameItems(got, want) {
		t.Fatal("the wire's codec sent other items than the plain one")
	}
	if got = trim(rawCodec); !sameItems(got, want) {
		t.Fatal("a resent transcript: the wire's codec sent other items than the plain one")
	}
	plain := testing.AllocsPerRun(5, func() { trim(plainRaw) })
	kept := testing.AllocsPerRun(5, func() { trim(rawCodec) })
	t.Logf("allocations per trim of %d items: %.0f plain, %.0f through the memo", len(items), plain, kept)
	if kept > plain/2 {
		t.Errorf("a resent transcript allocates %.0f times per trim through the memo, %.0f without: it is read again", kept, plain)
	}
}

// sameItems reports whether a and b hold the same bytes in the same order.
func sameItems(a, b []json.RawMessage) bool {
	return slices.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

// TestItemMemo: what the memo gives for an item is what it kept for the
// item's bytes (a view, a rewrite for the same text and kind), never a
// read again; an item not built from its raw JSON is read and rewritten
// as without the memo and never kept; a rewrite for another text is made
// again; each table stays within its bound, starting afresh past it.
func TestItemMemo(t *testing.T) {
	raw := json.RawMessage(`{"type":"function_call_output","call_id":"c","output":"long output"}`)
	t.Run("a kept view is what is read", func(t *testing.T) {
		var m itemMemo
		u := newOverride(raw)
		v, err := m.read(&u)
		if err != nil || v.cls != clsResult || v.callID != "c" {
			t.Fatalf("read %+v, %v", v, err)
		}
		m.views[string(raw)] = &decoded{u: u, v: view{cls: clsUser, content: "kept"}, read: true}
		u2 := newOverride(bytes.Clone(raw)) // equal bytes, another array
		if v, _ := m.read(&u2); v.content != "kept" {
			t.Fatalf("an equal item read again: %+v", v)
		}
	})
	t.Run("a decoded item is read by the address of its bytes", func(t *testing.T) {
		var m itemMemo
		u := m.decode(raw) // kept, holding a copy of raw
		if v, err := m.read(&u); err != nil || v.callID != "c" {
			t.Fatalf("read %+v, %v", v, err)
		}
		own, _ := rawOf(&u)
		if _, ok := m.reads[&own[0]]; !ok || len(m.reads) != 1 {
			t.Fatalf("the kept copy's view is not kept by its address (%d kept)", len(m.reads))
		}
		if _, ok := m.reads[&raw[0]]; ok {
			t.Fatal("the caller's bytes are kept by their address")
		}
		m.reads[&own[0]] = &decoded{u: u, v: view{cls: clsUser, content: "by address"}, read: true}
		if v, _ := m.read(&u); v.content != "by address" {
			t.Fatalf("the decoded item read by its bytes: %+v", v)
		}
		u2 := newOverride(bytes.Clone(raw)) // equal bytes, another array: by its bytes
		if v, _ := m.read(&u2); v.content == "by address" || v.callID != "c" {
			t.Fatalf("an equal item in another array read %+v", v)
		}
	})
	t.Run("an item in stable bytes is found by their address", func(t *testing.T) {
		frozen := bytes.Clone(raw) // the wire's copy of a conversation's array, say
		was := bytecache.Stable
		bytecache.Stable = func(b []byte) bool { return len(b) == len(frozen) && &b[0] == &frozen[0] }
		defer func() { bytecache.Stable = was }()
		var m itemMemo
		m.decode(frozen)
		e, ok := m.stableAt[&frozen[0]]
		if !ok || e.n != len(frozen) || m.views[string(raw)] != e.d {
			t.Fatalf("the item is not kept by the address of its stable bytes (%d kept)", len(m.stableAt))
		}
		m.stableAt[&frozen[0]] = stableEntry{&decoded{u: newOverride(json.RawMessage(`{"by":"address"}`))}, len(frozen)}
		if u := m.decode(frozen); !bytes.Equal(must(rawOf(&u)), []byte(`{"by":"address"}`)) {
			t.Fatalf("stable bytes decoded by their bytes: %s", must(rawOf(&u)))
		}
		for _, b := range [][]byte{bytes.Clone(raw), frozen[:len(frozen)-1]} { // equal bytes elsewhere; a shorter run at the address
			if u := m.decode(b); !bytes.Equal(must(rawOf(&u)), b) {
				t.Fatalf("%s decoded as %s", b, must(rawOf(&u)))
			}
		}
		if len(m.stableAt) != 1 {
			t.Fatalf("%d addresses kept, want the stable one alone", len(m.stableAt))
		}
		small := itemMemo{limit: 3*len(raw) + memoEntry} // room for the item, not for its stable address too
		small.decode(frozen)
		if len(small.stableAt) != 0 || small.viewBytes > small.limit {
			t.Fatalf("past its bound the memo keeps %d addresses, %d bytes", len(small.stableAt), small.viewBytes)
		}
	})
	t.Run("a decoded item's rewrite and splice are kept by the address of its bytes", func(t *testing.T) {
		var m itemMemo
		u := m.decode(raw)
		if _, err := m.read(&u); err != nil {
			t.Fatal(err)
		}
		first := m.rewrite(u, "placeholder", false)
		own, _ := rawOf(&u)
		r := m.rewriteAt[&own[0]]
		if r == nil || len(m.rewriteAt) != 1 || m.rewrites[string(raw)] != r {
			t.Fatalf("the rewrite of a decoded item is not kept by its address (%d kept)", len(m.rewriteAt))
		}
		if b, _ := rawJSON(&first); !bytes.Equal(b, r.raw) {
			t.Fatalf("rewritten to %s, kept %s", b, r.raw)
		}
		m.rewriteAt[&own[0]] = &rewritten{text: "placeholder", raw: []byte(`{"by":"address"}`)}
		byAddress := m.rewrite(u, "placeholder", false)
		if b, _ := rawJSON(&byAddress); string(b) != `{"by":"address"}` {
			t.Fatalf("the decoded item rewritten by its bytes: %s", b)
		}
		other := newOverride(bytes.Clone(raw)) // equal bytes, another array: by its bytes
		byBytes := m.rewrite(other, "placeholder", false)
		if b, _ := rawJSON(&byBytes); !bytes.Equal(b, r.raw) {
			t.Fatalf("an equal item in another array rewritten to %s", b)
		}
		m.rewriteAt[&own[0]] = r
		again := m.rewrite(u, "placeholder", false)
		now, _ := rawOf(&again)
		if _, ok := m.splicedOf(&u, now); ok {
			t.Fatal("a splice found before one was kept")
		}
		m.keepSpliced(&u, now, []byte(`{"spliced":1}`))
		if out, ok := m.splicedOf(&u, now); !ok || string(out) != `{"spliced":1}` {
			t.Fatalf("the kept splice not found: %s, %v", out, ok)
		}
		if _, ok := m.splicedOf(&other, now); ok {
			t.Fatal("a splice found for an item the memo did not decode")
		}
		if _, ok := m.splicedOf(&u, []byte(`{"another":1}`)); ok {
			t.Fatal("a splice found for another rewrite")
		}
		if m.rewrites[string(raw)].spliced == nil || r.spliced != nil {
			t.Fatal("the splice was not kept in a new entry of both tables")
		}
	})
	t.Run("an item kept as it came is orig itself", func(t *testing.T) {
		var m itemMemo
		orig := bytes.Clone(raw)
		u := m.decode(orig)
		got, ok := splice(orig, &u, &u)
		if !ok || !sameSlice(got, orig) {
			t.Fatalf("spliced to %s (%v), not orig itself", got, ok)
		}
	})
	t.Run("a typed item is read, not kept", func(t *testing.T) {
		var m itemMemo
		u := functionOutput("c", "typed")
		if v, err := m.read(&u); err != nil || v.content != "typed" {
			t.Fatalf("read %+v, %v", v, err)
		}
		if len(m.views) != 0 {
			t.Fatalf("%d views kept for a typed item", len(m.views))
		}
		if got := jsonOf(t, m.rewrite(u, "elided", false)); got != jsonOf(t, elide(u, "elided")) {
			t.Fatalf("rewritten to %s", got)
		}
	})
	t.Run("a rewrite kept per text and kind", func(t *testing.T) {
		var m itemMemo
		first := m.rewrite(newOverride(raw), "placeholder", false)
		want, _ := rawJSON(&first)
		if !bytes.Contains(want, []byte(`"output":"placeholder"`)) {
			t.Fatalf("elided to %s", want)
		}
		m.rewrites[string(raw)] = &rewritten{text: "placeholder", raw: []byte(`{"kept":1}`)}
		again := m.rewrite(newOverride(bytes.Clone(raw)), "placeholder", false)
		if b, _ := rawJSON(&again); string(b) != `{"kept":1}` {
			t.Fatalf("an equal item rewritten again: %s", b)
		}
		other := m.rewrite(newOverride(raw), "another", false)
		if b, _ := rawJSON(&other); !bytes.Contains(b, []byte(`"output":"another"`)) {
			t.Fatalf("another text gave %s", b)
		}
		asArgs := m.rewrite(newOverride(raw), "another", true)
		if b, _ := rawJSON(&asArgs); !bytes.Equal(b, raw) { // an output has no arguments: sent as it came
			t.Fatalf("cleared arguments of an output: %s", b)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		m := itemMemo{limit: 8 << 10}
		for i := range 500 {
			u := newOverride(json.RawMessage(`{"type":"function_call_output","call_id":"c` + strconv.Itoa(i) + `","output":"` + strings.Repeat("x", 100) + `"}`))
			if _, err := m.read(&u); err != nil {
				t.Fatal(err)
			}
			m.rewrite(u, "p"+strconv.Itoa(i), false)
			if d := m.decode(json.RawMessage(`{"role":"user","content":"` + strconv.Itoa(i) + `"}`)); jsonOf(t, d) != `{"role":"user","content":"`+strconv.Itoa(i)+`"}` {
				t.Fatalf("decoded to %s", jsonOf(t, d))
			}
			if m.viewBytes > m.limit || m.rewriteBytes > m.limit {
				t.Fatalf("item %d: %d and %d bytes kept, over %d", i, m.viewBytes, m.rewriteBytes, m.limit)
			}
		}
		if len(m.views) == 0 || len(m.views) > 500/5 || len(m.rewrites) == 0 || len(m.rewrites) > 500/5 {
			t.Fatalf("%d views and %d rewrites kept", len(m.views), len(m.rewrites))
		}
		if len(m.rewriteAt) > len(m.rewrites) {
			t.Fatalf("%d rewrites kept by address, %d by bytes: the two tables start afresh together", len(m.rewriteAt), len(m.rewrites))
		}
		if len(m.reads) == 0 || len(m.reads) > len(m.views) {
			t.Fatalf("%d views kept by address, %d by bytes: the two tables start afresh together", len(m.reads), len(m.views))
		}
	})
}

// TestWireMemoConcurrent: requests trimmed at once through the wire's
// codec, over the same items and their own, send what the plain codec
// sends (run under -race: the memo is shared by every request).
func TestWireMemoConcurrent(t *testing.T) {
	opts := []history.Option{history.WithElision(history.ElideOptions{ClearArguments: 1}), history.WithOverhead(30)}
	workers := 4
	if race.Enabled {
		workers = 3
	}
	type job struct {
		params json.RawMessage
		items  []json.RawMessage
		want   []json.RawMessage
	}
	var jobs []job
	for k := range workers {
		for _, tag := range []string{"shared", "own" + strconv.Itoa(k)} {
			params, items := memoBody("concurrent "+tag, 6)
			want, _, err := plainRaw.Trim(params, items, 2_000, opts)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, job{params, items, want})
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(jobs)*3)
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				got, _, err := rawCodec.Trim(j.params, j.items, 2_000, opts)
				if err != nil || !sameItems(got, j.want) {
					errs <- "a concurrent trim sent other items than the plain codec"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestWireOutputsReleased: the wire's codec builds its trimmed items in an
// array it takes back once adapt.RawSplice has read them (View.Release),
// with its conversion's views: emptied, so that the pools keep no item's
// memory alive, and given to a later request, whose output is the same as from a fresh array (and
// TestWireGolden holds every output to the plain codec's, on a second
// pass too); an output that is the input itself (nothing trimmed) is
// never taken back.
func TestWireOutputsReleased(t *testing.T) {
	// One processor: what a request gives back, the next one takes (a
	// Pool keeps an item per processor).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	_, raws := memoBody("released", 8)
	items := make([]Item, len(raws))
	for i, m := range raws {
		items[i] = wireMemo.decode(m)
	}
	opts := []history.Option{history.WithElision(history.ElideOptions{}), history.WithOverhead(30)}
	v, err := convertView(items, opts, currentTurn, &wireMemo)
	if err != nil {
		t.Fatal(err)
	}
	res, err := history.TrimToRecentTurns(v.Hist, 1_500, opts...)
	if err != nil || res.ElidedResults == 0 && len(res.Kept) == len(v.Hist) {
		t.Fatalf("nothing trimmed (%v): the test shows nothing", err)
	}
	out, _ := v.Back(res)
	want := make([]string, len(out))
	for k := range out {
		want[k] = jsonOf(t, out[k])
	}
	array := out[:cap(out)]
	wantHist := slices.Clone(v.Hist)
	v.Release()
	for k := range array {
		if !reflect.ValueOf(array[k]).IsZero() {
			t.Fatalf("item %d of the released array still set", k)
		}
	}
	if p, _ := viewArrays.Get().(*[]view); p != nil {
		for i, w := range (*p)[:cap(*p)] {
			if !reflect.ValueOf(w).IsZero() {
				t.Fatalf("view %d of the released conversion still set", i)
			}
		}
		viewArrays.Put(p)
	} else if !race.Enabled { // (sync.Pool drops at random under it)
		t.Error("the conversion's views were not released")
	}
	if p, _ := histArrays.Get().(*histArray); p != nil {
		for i, m := range p.hist[:cap(p.hist)] {
			if !reflect.ValueOf(m).IsZero() {
				t.Fatalf("message %d of the released conversion still set", i)
			}
		}
		for i, sl := range p.slots[:cap(p.slots)] {
			if !reflect.ValueOf(sl).IsZero() {
				t.Fatalf("slot %d of the released conversion still set", i)
			}
		}
		for i, g := range p.groups[:cap(p.groups)] {
			if g != nil {
				t.Fatalf("group %d of the released conversion still set", i)
			}
		}
		histArrays.Put(p)
	} else if !race.Enabled {
		t.Error("the conversion's messages were not released")
	}
	// A later request's output, in an array from the pool or its own.
	v2, err := convertView(items, opts, currentTurn, &wireMemo)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v2.Hist, wantHist) {
		t.Fatal("a conversion in released arrays differs from one in fresh arrays")
	}
	out2, _ := v2.Back(res)
	if len(out2) != len(want) {
		t.Fatalf("%d items, then %d", len(want), len(out2))
	}
	for k := range out2 {
		if got := jsonOf(t, out2[k]); got != want[k] {
			t.Fatalf("item %d: %s, from a fresh array %s", k, got, want[k])
		}
	}
	if !race.Enabled && &out2[:1][0] != &array[:1][0] {
		// (Under the race detector sync.Pool drops what it is given at
		// random.)
		t.Error("the released array was not reused")
	}
	v2.Release()

	v3, err := convertView(items, opts, currentTurn, &wireMemo)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := history.TrimToRecentTurns(v3.Hist, 1<<40, opts...)
	same, _ := v3.Back(whole)
	if len(same) != len(items) || &same[0] != &items[0] {
		t.Fatal("an untrimmed output is not the input itself")
	}
	before := jsonOf(t, items[0])
	v3.Release()
	if jsonOf(t, items[0]) != before {
		t.Fatal("the input was released")
	}
}

// must returns v, the first of a call's two results.
func must[T any](v T, _ bool) T { return v }
