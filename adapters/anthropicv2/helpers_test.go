package anthropicv2

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/histrim/history/internal/adaptertest"
)

type msg = anthropic.MessageParam

func user(blocks ...union) msg { return anthropic.NewUserMessage(blocks...) }

func assistant(blocks ...union) msg { return anthropic.NewAssistantMessage(blocks...) }

func text(s string) union { return anthropic.NewTextBlock(s) }

func toolUse(id, name string) union {
	return anthropic.NewToolUseBlock(id, map[string]any{"q": name}, name)
}

func result(id, content string) union { return anthropic.NewToolResultBlock(id, content, false) }

func cached(b union) union {
	if p := b.GetCacheControl(); p != nil {
		*p = anthropic.NewCacheControlEphemeralParam()
	}
	return b
}

// compaction is a compaction block as the API returns it and a client
// sends it back: through its JSON (the GA types do not model it).
func compaction(summary string, n int) union {
	return param.Override[union](json.RawMessage(`{"type":"compaction","content":` + strconv.Quote(summary) +
		`,"encrypted_content":"enc-` + strconv.Itoa(n) + `==","signature":"sig-` + strconv.Itoa(n) + `","tool_changes":[],"cache_control":{"type":"ephemeral"}}`))
}

// genRequest builds a request from data: tasks, tool steps (thinking,
// cached results, param.Override blocks), notes, compaction blocks at the
// start of assistant messages (some null, some empty), stray results.
func genRequest(data []byte) ([]anthropic.TextBlockParam, []msg) {
	system := []anthropic.TextBlockParam{{Text: "You are an agent."}}
	var msgs []msg
	id := 0
	for _, v := range data {
		b := int(v)
		switch b % 9 {
		case 0, 8:
			msgs = append(msgs, user(text(adaptertest.TaskText(b))))
		case 1:
			msgs = append(msgs, assistant(text(adaptertest.NoteText(b))))
		case 2:
			c := compaction("summary "+strconv.Itoa(b)+" "+strings.Repeat("w ", b%50), b)
			switch b % 5 {
			case 3:
				c = param.Override[union](json.RawMessage(`{"type":"compaction","content":null,"encrypted_content":"x"}`))
			case 4:
				c = param.Override[union](json.RawMessage(`{"type":"compaction","content":"","encrypted_content":"y"}`))
			}
			msgs = append(msgs, assistant(c, text(adaptertest.NoteText(b))))
		case 7:
			msgs = append(msgs, user(result("stray_"+strconv.Itoa(b), "x"), text("go on")))
		default:
			id++
			tid := "toolu_" + strconv.Itoa(id)
			var blocks []union
			if b%4 != 2 {
				blocks = append(blocks, anthropic.NewThinkingBlock("sig"+strconv.Itoa(b), "thinking "+strconv.Itoa(b)))
			}
			if b%2 == 0 {
				blocks = append(blocks, anthropic.NewToolUseBlock(tid, map[string]any{"path": "src/" + strconv.Itoa(b) + ".go",
					"content": strings.Repeat("x := 1\n", 40+b%20)}, "write_file"))
			} else {
				blocks = append(blocks, toolUse(tid, "read_file"))
			}
			r := result(tid, adaptertest.OutputText(b, 0))
			if b%3 == 0 {
				r = cached(r)
			}
			if b%5 == 1 {
				r = param.Override[union](json.RawMessage(`{"type":"tool_result","tool_use_id":` + strconv.Quote(tid) +
					`,"content":` + strconv.Quote(adaptertest.OutputText(b, 1)) + `,"x_trace":"t"}`))
			}
			msgs = append(msgs, assistant(blocks...), user(r))
		}
	}
	return system, msgs
}

// contractConversation is ten turns and more of task, call, result,
// answer.
func contractConversation() []msg {
	var msgs []msg
	for i := range 6 {
		id := "toolu_" + strconv.Itoa(i)
		msgs = append(msgs, user(text("task "+strconv.Itoa(i)+strings.Repeat(" words", 20))), assistant(toolUse(id, "read")),
			user(result(id, strings.Repeat("output line\n", 40))), assistant(text("done "+strconv.Itoa(i))))
	}
	return msgs
}
