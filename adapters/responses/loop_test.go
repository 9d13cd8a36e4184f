package responses

// The loop a runtime runs with the Responses API, through the real
// openai-go client (client.Responses.New) against the fake API of
// sdk_test.go in its loop mode: Trim with a Calibration, the request's
// Overhead, elision and step trimming; usage.input_tokens observed; an
// overflow, whose body states no sizes, recovered with RecoverOverflow.
// The fake API still enforces the reasoning binding and the pairing of
// calls and outputs, now counted as the loop's violations.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// loopWindow is the window of TestAgentLoop.
const loopWindow = 12_000

// newLoopAPI returns a fake reasoning model whose requests l counts and
// checks.
func newLoopAPI(l *adaptertest.Loop) *fakeAPI {
	f := newFakeAPI(l.Window)
	f.loop = l
	return f
}

// count returns l's count of a request of input items and tools JSON, and
// whether it fits: the items are read as the adapter's ToHistory reads
// them, and the latest task must be the text of a user message among them.
func (f *fakeAPI) count(input []json.RawMessage, tools string) (int, bool) {
	items := make([]Item, len(input))
	for i, raw := range input {
		items[i] = param.Override[Item](raw)
	}
	hist, err := ToHistory(items)
	if err != nil {
		f.loop.Note("the server cannot read a request: %v", err)
	}
	holds := func(text string) bool {
		for _, raw := range input {
			var m struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			}
			if json.Unmarshal(raw, &m) != nil || m.Role != "user" {
				continue
			}
			var s string
			if json.Unmarshal(m.Content, &s) == nil && s == text {
				return true
			}
			var parts []struct {
				Type, Text string
			}
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				if p.Type == "input_text" && p.Text == text {
					return true
				}
			}
		}
		return false
	}
	return f.loop.Receive(hist, tools, holds)
}

// loopSteps is how many tool steps the script takes on task t: 1 to 6.
func loopSteps(task int) int { return 1 + int(loopMix(uint64(task)*7919)%6) }

// loopMix is splitmix64's finaliser.
func loopMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// respondLoop returns the JSON of the script's response to items, whose
// count is input: reasoning, then the calls of the next step of the
// latest task ("Task T: ..."), one or two, with call ids call_T_S_K; after
// the task's last step, a final message. Where the input is, the script
// reads from its last item: the task, or the output of a call of step S.
func (f *fakeAPI) respondLoop(items []wireItem, input int) []byte {
	f.n++
	n := strconv.Itoa(f.n)
	output := []map[string]any{{"type": "reasoning", "id": "rs_" + n, "summary": []any{},
		"encrypted_content": "gAAAAB" + strings.Repeat("q8Zr", 60+f.n%40)}}
	task, step := 0, 0
	last := items[len(items)-1]
	if last.Type == "function_call_output" {
		fmt.Sscanf(last.CallID, "call_%d_%d_", &task, &step)
	} else if raw := f.lastInput[len(f.lastInput)-1]; last.Role == "user" {
		var m struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(raw, &m)
		fmt.Sscanf(m.Content, "Task %d:", &task)
	}
	if task == 0 || step >= loopSteps(task) {
		output = append(output, map[string]any{"type": "message", "id": "msg_" + n, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "Task " + strconv.Itoa(task) + " is done.", "annotations": []any{}}}})
		return f.response(n, output, input)
	}
	step++
	for k := range 1 + int(loopMix(uint64(task*31+step))%4/3) { // a quarter of the steps make two calls
		output = append(output, map[string]any{"type": "function_call", "id": "fc_" + n + "_" + strconv.Itoa(k),
			"call_id": fmt.Sprintf("call_%d_%d_%d", task, step, k), "name": loopToolName(int(loopMix(uint64(task*131+step*17+k)) % 20)),
			"arguments": fmt.Sprintf(`{"path":"src/module%d/file%d.go","limit":400}`, task, step), "status": "completed"})
	}
	return f.response(n, output, input)
}

func loopToolName(i int) string { return fmt.Sprintf("tool_%02d", i) }

// loopTools are the 20 function tools every request offers.
func loopTools() []responses.ToolUnionParam {
	tools := make([]responses.ToolUnionParam, 20)
	for i := range tools {
		tools[i] = responses.ToolParamOfFunction(loopToolName(i), map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":   map[string]any{"type": "string", "description": "Path of the file, relative to the workspace root."},
				"offset": map[string]any{"type": "integer", "description": "First line to read, from 1."},
				"limit":  map[string]any{"type": "integer", "description": "Number of lines to read at most."},
			},
			"required": []string{"path"},
		}, false)
		tools[i].OfFunction.Description = openai.String("Tool " + strconv.Itoa(i) + " reads a file of the workspace, or a part of it, and returns its lines " +
			"with their numbers; use it before editing, and again after an edit to check the result.")
	}
	return tools
}

var loopVocabulary = strings.Fields(`func return if err != nil { } package import the value of a
	slice map string int error context handler request response buffer index length
	count token budget message content part call result => := ( ) [ ] // TODO fix
	check test assert want got t.Fatalf 0 1 42 1024 "ok" "failed" nil`)

// loopOutput is the output of call id: l.Words words of code and prose.
func loopOutput(l *adaptertest.Loop, id string) string {
	h := uint64(14695981039346656037)
	for i := range len(id) {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	n := l.Words(loopMix(h))
	var b strings.Builder
	for i := range n {
		h = loopMix(h)
		b.WriteString(loopVocabulary[h%uint64(len(loopVocabulary))])
		if i%12 == 11 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// runLoop runs l.Turns user turns of 1 to 6 tool steps through the real
// client against the fake API in loop mode, trimming the transcript to
// l.Window before each request as the loop of this file's comment does.
// Errors that would reach the caller are recorded in l, and the loop goes
// on with the next turn. kind "trim" trims with Trim and the Calibration;
// "trimmer" with one Trimmer (low-water mark 0.7 on top of the options)
// and no Calibration, "trimmer+cal" with one. It returns the rejections
// after the first recovery.
func runLoop(t *testing.T, l *adaptertest.Loop, kind string) (afterFirst int) {
	t.Helper()
	api := newLoopAPI(l)
	c := api.client(t)
	ctx := context.Background()
	params := responses.ResponseNewParams{Model: "o4-mini", Tools: loopTools()}
	var cal history.Calibration
	opts := []history.Option{
		history.WithCalibration(&cal),
		history.WithOverhead(Overhead(params, nil)),
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	trim := func(transcript []Item) ([]Item, history.Result, error) { return Trim(transcript, l.Window, opts...) }
	recover := func(_, sent []Item, err error, attempt int) ([]Item, history.Result, error) {
		return RecoverOverflow(sent, err, attempt, opts...)
	}
	if kind != "trim" {
		topts := append(slices.Clip(opts[1:]), history.WithLowWater(0.7))
		if kind == "trimmer+cal" {
			topts = append(topts, history.WithCalibration(&cal))
		}
		tr := NewTrimmer(topts...)
		trim = func(transcript []Item) ([]Item, history.Result, error) { return tr.Trim(transcript, l.Window) }
		recover = func(transcript, _ []Item, err error, attempt int) ([]Item, history.Result, error) {
			return tr.RecoverOverflow(transcript, err, attempt)
		}
	}
	recovered := false
	send := func(items []Item) (*responses.Response, error) {
		p := params
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
		return c.Responses.New(ctx, p)
	}
	transcript := []Item{developer("You are a coding agent. Use the tools to read files before you answer.")}
	for turn := 1; turn <= l.Turns; turn++ {
		task := "Task " + strconv.Itoa(turn) + ": look into module " + strconv.Itoa(turn*13%97) + " and fix what you find."
		l.Turn(turn, task)
		transcript = append(transcript, user(task))
	steps:
		for step := 0; ; step++ {
			if step > 7 {
				t.Fatalf("turn %d does not end", turn)
			}
			items, res, err := trim(transcript)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				l.Error(fmt.Errorf("Trim: %w", err))
				break
			}
			resp, err := send(items)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				if !history.IsContextOverflow(err) {
					break
				}
				l.Rejected(attempt-1, res, &cal)
				if recovered {
					afterFirst++
				}
				recovered = true
				var rerr error
				if items, res, rerr = recover(transcript, items, err, attempt); rerr != nil {
					l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
					break steps
				}
				resp, err = send(items)
			}
			if err != nil {
				l.Error(err)
				break
			}
			input := int(resp.Usage.InputTokens)
			cal.Observe(res.TokensAfter, input)
			l.Accepted(res.Trimmed, input)
			var calls []string
			for _, o := range resp.Output {
				switch o.Type {
				case "reasoning":
					r := o.AsReasoning().ToParam()
					transcript = append(transcript, Item{OfReasoning: &r})
				case "message":
					m := o.AsMessage().ToParam()
					transcript = append(transcript, Item{OfOutputMessage: &m})
				default:
					transcript = append(transcript, param.Override[Item](json.RawMessage(o.RawJSON())))
					if o.Type == "function_call" {
						calls = append(calls, o.CallID)
					}
				}
			}
			if len(calls) == 0 {
				break
			}
			for _, id := range calls {
				transcript = append(transcript, functionOutput(id, loopOutput(l, id)))
			}
		}
	}
	return afterFirst
}

// TestAgentLoop runs the loop against a provider that counts 1.3 and 0.8
// times the library's estimate, at a window of 12,000 tokens that is also
// the budget: the calibration, taught by input_tokens and by overflows
// that state no sizes, keeps every request under the window after at most
// one overflow while filling it, and the binding and pairing hold.
func TestAgentLoop(t *testing.T) {
	for _, f := range []float64{1.3, 0.8} {
		t.Run("F="+strconv.FormatFloat(f, 'g', -1, 64), func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("responses", adaptertest.Skew(f), loopWindow)
			if raceEnabled {
				l.Turns = 20 // the race detector makes each request some ten times slower
			}
			runLoop(t, l, "trim")
			t.Log(l.Stats().Row())
			l.Check(t)
		})
	}
}

// TestStatefulLoop runs the loop with the Trimmer against a provider
// counting 1.3 times the library's estimate, with and without a
// Calibration (issue 23: at most 1 rejection after the first recovery).
func TestStatefulLoop(t *testing.T) {
	for _, kind := range []string{"trimmer", "trimmer+cal"} {
		l := adaptertest.NewLoop("responses", adaptertest.Skew(1.3), loopWindow)
		if raceEnabled {
			l.Turns = 20
		}
		adaptertest.CheckStateful(t, l, kind, runLoop(t, l, kind))
	}
}
