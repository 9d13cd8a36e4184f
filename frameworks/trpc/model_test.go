package trpc_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	htrpc "github.com/histrim/history/frameworks/trpc"
	"github.com/histrim/history/internal/loopserver"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/model/openai"
)

// chat returns a system prompt and turns user turns of a question and an
// answer of about words words each.
func chat(turns, words int) []model.Message {
	msgs := []model.Message{model.NewSystemMessage(loopserver.SystemPrompt)}
	for i := range turns {
		msgs = append(msgs, model.NewUserMessage("question "+strconv.Itoa(i)+": "+strings.Repeat("why ", words)),
			model.NewAssistantMessage(strings.Repeat("because ", words)))
	}
	return append(msgs, model.NewUserMessage(loopserver.Task(1)))
}

// generate sends msgs through m and returns its responses.
func generate(t *testing.T, m model.Model, msgs []model.Message) []*model.Response {
	t.Helper()
	ch, err := m.GenerateContent(context.Background(), &model.Request{Messages: msgs, GenerationConfig: model.GenerationConfig{Stream: false}})
	if err != nil {
		t.Fatal(err)
	}
	var out []*model.Response
	for r := range ch {
		out = append(out, r)
	}
	return out
}

// TestWrapRecovers: a provider counting 1.6 times what the Strategy
// aims at rejects the first request; Wrap trims what was sent below the
// sizes the 400 states and resends it, and the caller sees the answer
// only. The calibration learnt from the rejection and the usage.
func TestWrapRecovers(t *testing.T) {
	const window = 4000
	srv := &loopserver.OpenAI{Judge: loopserver.Skew{Window: window, Factor: 1.6}, Window: window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var cal history.Calibration
	observed := 0
	s := htrpc.NewStrategy(htrpc.Config{Calibration: &cal, OnObserve: func(int, int, history.Verdict) { observed++ }})
	m := newModel(ts.URL+"/v1", window, s)
	out := generate(t, m, chat(40, 60))
	if len(out) != 1 || out[0].Error != nil || len(out[0].Choices) != 1 {
		t.Fatalf("responses %+v", out)
	}
	if st := srv.Stats(); st.Overflows != 1 || st.Accepted != 1 || observed != 1 {
		t.Errorf("server %+v, %d observations", st, observed)
	}
	if _, _, _, ok := cal.Model(); !ok {
		t.Error("the calibration learnt nothing")
	}
}

// TestWrapGivesUp: when only the latest turn is left and still too long,
// the provider's rejection reaches the caller as it came.
func TestWrapGivesUp(t *testing.T) {
	const window = 1100
	srv := &loopserver.OpenAI{Judge: loopserver.Skew{Window: 100, Factor: 1}, Window: 100}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	m := newModel(ts.URL+"/v1", window, htrpc.NewStrategy(htrpc.Config{}))
	msgs := append(chat(3, 100), model.NewUserMessage(strings.Repeat("and then ", 100)))
	out := generate(t, m, msgs)
	last := out[len(out)-1]
	if last.Error == nil || !history.IsContextOverflow(last.Error) {
		t.Fatalf("last response %+v", last)
	}
	if st := srv.Stats(); st.Overflows < 2 || st.Overflows > 1+htrpc.MaxRetries || st.Accepted != 0 {
		t.Errorf("server %+v", st)
	}
}

// TestStrategyAlone: without Wrap, the Strategy still trims whole turns
// behind one notice, and trpc-agent-go sends what it returned.
func TestStrategyAlone(t *testing.T) {
	const window = 4000
	srv := &loopserver.OpenAI{Judge: loopserver.Skew{Window: window, Factor: 1}, Window: window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s := htrpc.NewStrategy(htrpc.Config{})
	m := openai.New("local", openai.WithBaseURL(ts.URL+"/v1"), openai.WithAPIKey("k"), openai.WithEnableTokenTailoring(true),
		openai.WithContextWindow(window), openai.WithTailoringStrategy(s), openai.WithTokenCounter(s.Counter()))
	msgs := chat(40, 60)
	out := generate(t, m, msgs)
	if len(out) != 1 || out[0].Error != nil {
		t.Fatalf("responses %+v", out)
	}
	if st := srv.Stats(); st.Accepted != 1 {
		t.Errorf("server %+v", st)
	}
}
