package responses

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/internal/retained"
	"github.com/histrim/history/internal/wireapi"
	"github.com/histrim/history/models"
	hwire "github.com/histrim/history/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/wire_golden.txt with this code's outputs")

// goldenWire is where TestWireGolden pins the outputs.
const goldenWire = "testdata/wire_golden.txt"

// plainRaw is the raw codec as RegisterWire registered it before the
// wire kept what it read of an item: every item read through its JSON,
// every elided output re-encoded, on every request. TestWireGolden holds
// rawCodec's outputs to it.
var plainRaw = adapt.RawSplice(codec, rawContext,
	func(raw json.RawMessage) Item { return newOverride(raw) },
	func(u *Item) ([]byte, error) { return rawJSON(u) }, splice)

// encodedRaw is plainRaw without the splice: an item the trim changed is
// its encoding (TestWireSplice).
var encodedRaw = adapt.Raw(codec, rawContext,
	func(raw json.RawMessage) Item { return newOverride(raw) },
	func(u *Item) ([]byte, error) { return rawJSON(u) })

// goldenStr is s as a JSON string.
func goldenStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// corpusWireBody maps conversation c of the shared corpus (its place k)
// to a Responses body with the item shapes the wire reads: leading system
// messages as developer messages, user messages as a string or an
// input_text list, each assistant message as a reasoning item (encrypted
// content, a summary in every third), an output message with its text,
// and its calls: function calls (arguments as sent; a caller member in
// every eighth), every fifth a custom tool call; each tool message as the
// output of its call, a string or an input_text list; members the SDK does
// not know, and the whitespace of a hand-written body in every other
// conversation; reasoning.context "all" in every third.
func corpusWireBody(c adaptertest.Conversation, k int) []byte {
	sp := ""
	if k%2 == 1 {
		sp = " "
	}
	custom := map[string]bool{}
	var items []string
	a, u, r := 0, 0, 0
	for i, m := range c.Messages {
		n := strconv.Itoa(i)
		switch m.Role {
		case history.RoleSystem:
			items = append(items, `{"role":"developer","content":`+goldenStr(m.Content)+`}`)
		case history.RoleUser:
			u++
			if u%2 == 0 {
				items = append(items, `{"role":"user",`+sp+`"content":`+goldenStr(m.Content)+`}`)
			} else {
				items = append(items, `{"type":"message","role":"user","content":[{"type":"input_text","text":`+goldenStr(m.Content)+`}]}`)
			}
		case history.RoleAssistant:
			a++
			summary := "[]"
			if a%3 == 0 {
				summary = `[{"type":"summary_text","text":` + goldenStr("Thinking about "+m.Content[:min(len(m.Content), 120)]) + `}]`
			}
			items = append(items, `{"type":"reasoning","id":"rs_`+n+`",`+sp+`"summary":`+summary+`,"encrypted_content":"`+encrypted(c.Name, i)+`"}`)
			if m.Content != "" {
				items = append(items, `{"type":"message","id":"msg_`+n+`","role":"assistant","status":"completed","content":[{"type":"output_text","text":`+goldenStr(m.Content)+`,"annotations":[]}]}`)
			}
			for j, tc := range m.ToolCalls {
				if (a+j)%5 == 0 {
					custom[tc.ID] = true
					items = append(items, `{"type":"custom_tool_call","id":"ctc_`+n+`_`+strconv.Itoa(j)+`","call_id":`+goldenStr(tc.ID)+`,"name":`+goldenStr(tc.Name)+`,"input":`+goldenStr(tc.Arguments)+`}`)
					continue
				}
				caller := ""
				if (a+j)%8 == 0 {
					caller = `,"caller":{"type":"direct"}`
				}
				items = append(items, `{"type":"function_call",`+sp+`"id":"fc_`+n+`_`+strconv.Itoa(j)+`","call_id":`+goldenStr(tc.ID)+`,"name":`+goldenStr(tc.Name)+`,"arguments":`+goldenStr(tc.Arguments)+caller+`,"x_vendor":{"n":`+strconv.Itoa(j)+`}}`)
			}
		case history.RoleTool:
			r++
			typ := "function_call_output"
			if custom[m.ToolCallID] {
				typ = "custom_tool_call_output"
			}
			out := goldenStr(m.Content)
			if r%3 == 0 {
				out = `[{"type":"input_text","text":` + out + `}]`
			}
			items = append(items, `{"type":"`+typ+`","call_id":`+goldenStr(m.ToolCallID)+`,`+sp+`"output":`+out+`,"x_out":`+strconv.Itoa(r)+`}`)
		}
	}
	reasoning := `{"effort":"medium"}`
	if k%3 == 0 {
		reasoning = `{"effort":"medium","context":"all"}`
	}
	return []byte(`{"model":"o4-mini","instructions":"You are a coding agent.","reasoning":` + reasoning + `,` + sp +
		"\"input\":[\n" + sp + strings.Join(items, ",\n"+sp) + "\n],\"prompt_cache_key\":\"k" + strconv.Itoa(k) + `","store":false}`)
}

// goldenWireBodies are the Responses bodies TestWireGolden trims: the
// package's test bodies, one of every kind of call and output the
// adapter elides, and the shared corpus mapped to Responses.
func goldenWireBodies(t *testing.T) []struct {
	name string
	body []byte
} {
	big := func(s string) string { return strings.Repeat(s+" ", 300) }
	kinds := `{"model":"o4-mini","input":[{"role":"user","content":"go"},` +
		`{"type":"local_shell_call","id":"ls1","call_id":"lc1","status":"completed","action":{"type":"exec","command":["ls"],"env":{}}},` +
		`{"type":"local_shell_call_output","id":"ls1","output":` + goldenStr(big("file.go")) + `,"x":1},` +
		`{"type":"shell_call","call_id":"sc1","action":{"commands":["make"]},"status":"completed"},` +
		`{"type":"shell_call_output","call_id":"sc1","output":[{"stdout":` + goldenStr(big("built")) + `,"stderr":"w","outcome":{"type":"exit","exit_code":2}}]},` +
		`{"type":"apply_patch_call","call_id":"ap1","status":"completed","operation":{"type":"update_file","path":"a.go","diff":"-x\n+y"}},` +
		`{"type":"apply_patch_call_output","call_id":"ap1","status":"completed","output":` + goldenStr(big("patched")) + `},` +
		`{"type":"function_call","call_id":"f1","name":"grep","arguments":` + goldenStr(`{"q":"`+big("needle")+`"}`) + `},` +
		`{"type":"function_call_output","call_id":"f1","output":[{"type":"input_text","text":` + goldenStr(big("match")) + `},{"type":"input_image","image_url":"https://x/y.png","detail":"low"}]},` +
		`{"type":"computer_call","id":"cc1","call_id":"c1","action":{"type":"screenshot"},"pending_safety_checks":[],"status":"completed"},` +
		`{"type":"computer_call_output","call_id":"c1","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,iVBORw0KGgo="}},` +
		`{"role":"user","content":"next ` + big("words") + `"},` +
		`{"type":"custom_tool_call","call_id":"cu1","name":"py","input":` + goldenStr(big("print(1)")) + `},` +
		`{"type":"custom_tool_call_output","call_id":"cu1","output":` + goldenStr(big("1")) + `},` +
		`{"type":"function_call_output","call_id":"nobody","output":"orphan"},` +
		`{"type":"web_search_call","id":"ws1","status":"completed","action":{"type":"search","query":"q"}},` +
		`{"type":"item_reference","id":"msg_prev"},` +
		`{"type":"compaction","id":"cmp1","encrypted_content":"` + strings.Repeat("E", 400) + `"},` +
		`{"role":"user","content":[{"type":"input_text","text":"last"},{"type":"input_file","file_data":"` + strings.Repeat("Zm9v", 100) + `","filename":"f.txt"}]}],"store":false}`
	var nr strings.Builder
	nr.WriteString(`{"model":"gpt-4.1","input":[`)
	for turn := range 8 {
		n := strconv.Itoa(turn)
		if turn > 0 {
			nr.WriteString(",")
		}
		nr.WriteString(`{"role":"user","content":"step ` + n + `"},` +
			`{"type":"function_call","call_id":"w` + n + `","name":"write_file","arguments":` + goldenStr(`{"path":"f`+n+`.go","body":"`+big("code "+n)+`"}`) + `},` +
			`{"type":"function_call_output","call_id":"w` + n + `","output":` + goldenStr(big("wrote "+n)) + `},` +
			`{"type":"custom_tool_call","call_id":"p` + n + `","name":"py","input":` + goldenStr(big("print("+n+")")) + `},` +
			`{"type":"custom_tool_call_output","call_id":"p` + n + `","output":` + goldenStr(big("out "+n)) + `},` +
			`{"role":"assistant","content":"done ` + n + `"}`)
	}
	nr.WriteString(`]}`)
	noReasoning := nr.String()
	out := []struct {
		name string
		body []byte
	}{
		{"wireLoopBody-12", []byte(wireLoopBody(12, 3, 60, ""))},
		{"wireLoopBody-3", []byte(wireLoopBody(3, 2, 40, `[{"type":"function","name":"read_file","parameters":{}}]`))},
		{"wireLoopBody-30", []byte(wireLoopBody(30, 1, 25, ""))},
		{"kinds", []byte(kinds)},
		{"no-reasoning", []byte(noReasoning)},
		{"chained", []byte(`{"previous_response_id":"resp_1","input":[{"role":"user","content":"` + big("x") + `"}]}`)},
	}
	// A session's place in the whole corpus, which its body's shape
	// depends on: under the race detector, adaptertest.Corpus reads only
	// the short sessions (race.CorpusFile).
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "corpus", "real", "*.jsonl"))
	slices.Sort(files)
	place := map[string]int{}
	for k, f := range files {
		place[strings.TrimSuffix(filepath.Base(f), ".jsonl")] = k
	}
	// Under the race detector, 12 of those sessions (race.Sample): their
	// groups are compared with the pinned hashes as in the plain run,
	// which checks every session.
	for _, c := range race.Sample(adaptertest.Corpus(t, "../.."), 12) {
		out = append(out, struct {
			name string
			body []byte
		}{c.Name, corpusWireBody(c, place[c.Name])})
	}
	return out
}

// goldenWireHash writes an output into h: the body, or the error when
// there is none.
func goldenWireHash(h hash.Hash, body []byte, err error) {
	if body == nil {
		fmt.Fprintf(h, "error %v\n", err)
		return
	}
	fmt.Fprintf(h, "%d\n", len(body))
	h.Write(body)
}

// goldenRun trims the parsed body r with c as the Transport does, at five
// budgets per option set (the output of the 35% budget trimmed again, at
// two thirds of it: the notices it inserted read back as notices), then
// recovers it from an overflow, writing every output into the returned
// hash.
// goldenElided and goldenCleared count the outputs of goldenRun that hold
// an elided output and cleared arguments: the test must exercise both.
var goldenElided, goldenCleared int

func goldenRun(t *testing.T, c *wireapi.Codec, r *hwire.Request, total int, opts []history.Option) hash.Hash {
	params := r.Body([]json.RawMessage{})
	h := sha256.New()
	for _, pct := range []int{2, 10, 35, 75, 100} {
		budget := max(total*pct/100, 1)
		opts := append([]history.Option{history.WithOverhead(30)}, opts...)
		out, res, err := c.Trim(params, r.Messages(), budget, opts)
		var body []byte
		if out != nil {
			body = r.Body(out)
		}
		goldenWireHash(h, body, err)
		fmt.Fprintf(h, "%d %d %d\n", res.TokensBefore, res.TokensAfter, res.ElidedResults)
		if res.ElidedResults > 0 {
			goldenElided++
		}
		if bytes.Contains(body, []byte("[arguments elided")) {
			goldenCleared++
		}
		if out != nil && pct == 35 {
			r2, err := hwire.Parse("/v1/responses", body)
			if err != nil {
				t.Fatalf("output does not parse: %v", err)
			}
			out2, _, err := c.Trim(r2.Body([]json.RawMessage{}), r2.Messages(), max(budget*2/3, 1), opts)
			var body2 []byte
			if out2 != nil {
				body2 = r2.Body(out2)
			}
			goldenWireHash(h, body2, err)
		}
	}
	rec, _, err := c.RecoverOverflow(params, r.Messages(), adaptertest.OverflowText(max(total/2, 2), total), 1, opts)
	var body []byte
	if rec != nil {
		body = r.Body(rec)
	}
	goldenWireHash(h, body, err)
	return h
}

// TestWireGolden runs a corpus of Responses bodies (the shared corpus of
// real transcripts mapped to Responses with reasoning, output messages,
// function and custom tool calls and their outputs; every kind of output
// the adapter elides; the package's test bodies) through the codec
// RegisterWire registers, at five budgets with each rung of the
// degradation ladder, through RecoverOverflow, again over its own output,
// and through a Transport as a client loop that resends its growing
// transcript. Every output must be byte for byte what plainRaw (the codec
// that keeps nothing between requests) sends, on a first pass and on a
// second over the same items (the caches warm), and the outputs are
// pinned in testdata/wire_golden.txt (hashed per group) as the code
// before the caches sent them. -update rewrites the file.
func TestWireGolden(t *testing.T) {
	RegisterWire()
	got := map[string]string{}
	var names []string
	record := func(name string, h hash.Hash) {
		names = append(names, name)
		got[name] = hex.EncodeToString(h.Sum(nil)[:12])
	}
	for _, gb := range goldenWireBodies(t) {
		r, err := hwire.Parse("/v1/responses", gb.body)
		if err != nil {
			t.Fatalf("%s: %v", gb.name, err)
		}
		_, all, err := plainRaw.Trim(r.Body([]json.RawMessage{}), r.Messages(), 1<<40, nil)
		total := all.TokensBefore
		if err != nil || total == 0 {
			total = 10_000
		}
		for _, set := range adaptertest.LadderSets(true) {
			want := hex.EncodeToString(goldenRun(t, plainRaw, r, total, set.Opts).Sum(nil))
			for pass := range 2 {
				h := goldenRun(t, rawCodec, r, total, set.Opts)
				if hex.EncodeToString(h.Sum(nil)) != want {
					t.Errorf("%s/%s, pass %d: the wire's codec sent other bytes than the plain one", gb.name, set.Name, pass+1)
				}
				if pass == 1 {
					record(gb.name+"/"+set.Name, h)
				}
			}
		}
		wireapi.Register("openai_responses", plainRaw)
		want := goldenWireLoop(t, r, total)
		RegisterWire()
		h := goldenWireLoop(t, r, total)
		if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
			t.Errorf("%s/transport: the Transport sent other bytes than with the plain codec", gb.name)
		}
		record(gb.name+"/transport", h)
	}
	if goldenElided == 0 || goldenCleared == 0 {
		t.Errorf("%d outputs with elided outputs, %d with cleared arguments: the corpus must exercise both", goldenElided, goldenCleared)
	}
	t.Logf("%d groups; %d outputs with elided outputs, %d with cleared arguments", len(names), goldenElided, goldenCleared)
	adaptertest.Golden(t, goldenWire, "TestWireGolden's outputs (go test -run TestWireGolden -update)", names, got, *update)
}

// wireCapture is an upstream that keeps every body it is sent and
// answers with a small response and a usage.
type wireCapture struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *wireCapture) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	_ = req.Body.Close()
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.mu.Unlock()
	body := `{"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":` + strconv.Itoa(len(b)/4) + `,"output_tokens":2}}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// goldenWireLoop sends r's transcript through a Transport with the
// registered codec as a client loop does: one request per user message,
// each with the transcript up to it, the model's window a third of the
// whole; it returns the hash of what the upstream received.
func goldenWireLoop(t *testing.T, r *hwire.Request, total int) hash.Hash {
	up := &wireCapture{}
	window := max(total/3, 200) + 1024
	tr := &hwire.Transport{Base: up, Logger: slog.New(slog.DiscardHandler), Models: func(_ context.Context, name string) (models.Model, error) {
		return models.Model{Name: name, Provider: "openai", Window: window}, nil
	}}
	defer tr.Close()
	items := r.Messages()
	h := sha256.New()
	for n := 1; n <= len(items); n++ {
		var role struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(items[n-1], &role)
		if role.Role != "user" && n != len(items) {
			continue
		}
		body := r.Body(slices.Clone(items[:n]))
		req, _ := http.NewRequest(http.MethodPost, "http://upstream/v1/responses", bytes.NewReader(body))
		req.Header.Set(hwire.ConversationHeader, "golden")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	for _, b := range up.bodies {
		goldenWireHash(h, b, nil)
	}
	return h
}

// TestWireSplice: an item the trim changed (an output elided, a call's
// arguments cleared) is orig with that one member's value replaced
// (splice): every other byte as it came, the members' order and spacing
// and fields the SDK does not know included, where the encoding reorders
// and compacts them; and it decodes to what the encoding gave. Over
// TestWireGolden's bodies, at its budgets and option sets.
func TestWireSplice(t *testing.T) {
	changed, kept := 0, 0
	for _, gb := range goldenWireBodies(t) {
		r, err := hwire.Parse("/v1/responses", gb.body)
		if err != nil {
			t.Fatal(err)
		}
		items := r.Messages()
		total := history.EstimateText(string(gb.body))
		for _, set := range adaptertest.LadderSets(true) {
			for _, pct := range []int{2, 10, 35, 75} {
				budget := max(total*pct/100, 1)
				opts := append([]history.Option{history.WithOverhead(30)}, set.Opts...)
				got, _, from, _ := plainRaw.Decide(r.Body([]json.RawMessage{}), items, budget, opts, trimWith(budget))
				want, _, _, _ := encodedRaw.Decide(r.Body([]json.RawMessage{}), items, budget, opts, trimWith(budget))
				if len(got) != len(want) {
					t.Fatalf("%s/%s at %d%%: %d items, encoded %d", gb.name, set.Name, pct, len(got), len(want))
				}
				for k, b := range got {
					i := from[k]
					if i < 0 || bytes.Equal(b, items[i]) {
						continue
					}
					changed++
					var g, w any
					if json.Unmarshal(b, &g) != nil || json.Unmarshal(want[k], &w) != nil || !reflect.DeepEqual(g, w) {
						t.Fatalf("%s/%s at %d%%: item %d\n%s\ndecodes otherwise than its encoding\n%s", gb.name, set.Name, pct, k, b, want[k])
					}
					// Every byte of orig but those of one member's value.
					pre, suf := commonAffixes(items[i], b)
					inOne := false
					for _, key := range []string{"output", "result", "arguments", "input"} {
						if v, ok := wireapi.Member(items[i], key); ok {
							start := bytes.Index(items[i], v)
							if start >= 0 && pre >= start && len(items[i])-suf <= start+len(v) {
								inOne = true
							}
						}
					}
					if !inOne {
						t.Errorf("%s/%s at %d%%: item %d changed outside one value: %q became %q", gb.name, set.Name, pct, k,
							items[i][pre:len(items[i])-suf], b[pre:len(b)-suf])
					} else {
						kept++
					}
				}
			}
		}
	}
	if changed < 50 {
		t.Fatalf("%d items changed: the bodies exercise too little", changed)
	}
	t.Logf("%d items changed, %d of them orig but for one value", changed, kept)
}

// trimWith trims to budget with the package function.
func trimWith(budget int) func([]history.Message, []history.Option) (history.Result, error) {
	return func(hist []history.Message, opts []history.Option) (history.Result, error) {
		return history.TrimToRecentTurns(hist, budget, opts...)
	}
}

// commonAffixes returns the lengths of the longest common prefix and
// (of what is left) suffix of a and b.
func commonAffixes(a, b []byte) (pre, suf int) {
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	return pre, suf
}

// TestWireBodyNotRetained: TestWireGolden's Transport loops over the
// shared corpus with the registered codec, every request body the
// Transport is done with held weakly (retained.Watch): none is reachable
// once the collector ran, so that nothing the codec keeps (its memo of
// decoded items, readings, rewrites and splices, the conversations) holds
// a body's bytes, which the Transport reads the next request into.
func TestWireBodyNotRetained(t *testing.T) {
	RegisterWire()
	check := retained.Watch(t)
	bodies := goldenWireBodies(t)
	for _, gb := range bodies[:min(len(bodies), 6)] {
		r, err := hwire.Parse("/v1/responses", gb.body)
		if err != nil {
			t.Fatalf("%s: %v", gb.name, err)
		}
		goldenWireLoop(t, r, max(history.EstimateText(string(gb.body)), 1_000))
	}
	if n := check(); n == 0 {
		t.Fatal("no body was released: the check watched nothing")
	}
}
