package genkit_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/histrim/history"
	hgenkit "github.com/histrim/history/frameworks/genkit"
	"github.com/histrim/history/internal/loopserver"
)

// chat returns a system prompt and turns user turns of a question and an
// answer of about words words each, and the task of turn 1.
func chat(turns, words int) []*ai.Message {
	msgs := []*ai.Message{ai.NewSystemTextMessage(loopserver.SystemPrompt)}
	for i := range turns {
		msgs = append(msgs, ai.NewUserTextMessage("question "+strconv.Itoa(i)+": "+strings.Repeat("why ", words)),
			ai.NewModelTextMessage(strings.Repeat("because ", words)))
	}
	return append(msgs, ai.NewUserTextMessage(loopserver.Task(1)))
}

// TestMiddlewareRecovers: Gemini counting 1.6 times what the middleware
// aims at rejects the first request; the middleware trims what was sent
// below the sizes Gemini stated and resends it, the caller sees the
// answer only, the calibration learnt, and the response's history is the
// whole conversation.
func TestMiddlewareRecovers(t *testing.T) {
	const window = 4000
	srv := &loopserver.Gemini{Judge: loopserver.Skew{Window: window, Factor: 1.6}, Window: window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	g, tools := newGenkit(t, ts.URL, loopserver.Words(30, 60))
	var cal history.Calibration
	msgs := chat(40, 60)
	resp, err := genkit.Generate(context.Background(), g, ai.WithModelName(modelName), ai.WithTools(tools...), ai.WithMaxTurns(10),
		ai.WithMessages(msgs...), ai.WithMiddleware(hgenkit.Middleware(hgenkit.Config{Budget: window, Calibration: &cal})))
	if err != nil {
		t.Fatal(err)
	}
	if st := srv.Stats(); st.Overflows != 1 || st.Accepted < 2 {
		t.Errorf("server %+v", st)
	}
	if _, _, _, ok := cal.Model(); !ok {
		t.Error("the calibration learnt nothing")
	}
	if h := resp.History(); len(h) < len(msgs)+2 || h[1].Text() != msgs[1].Text() {
		t.Errorf("the history holds %d messages, the conversation %d and more", len(h), len(msgs))
	}
}

// TestMiddlewareGivesUp: when only the latest turn is left and still too
// long, Gemini's error reaches the caller.
func TestMiddlewareGivesUp(t *testing.T) {
	srv := &loopserver.Gemini{Judge: loopserver.Skew{Window: 100, Factor: 1}, Window: 100}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	g, _ := newGenkit(t, ts.URL, loopserver.Words(100, 200))
	msgs := append(chat(3, 100), ai.NewUserTextMessage(strings.Repeat("and then ", 100)))
	_, err := genkit.Generate(context.Background(), g, ai.WithModelName(modelName), ai.WithMessages(msgs...),
		ai.WithMiddleware(hgenkit.Middleware(hgenkit.Config{Budget: 1000})))
	if !history.IsContextOverflow(err) {
		t.Fatalf("error %v", err)
	}
	if st := srv.Stats(); st.Overflows < 2 || st.Overflows > 1+hgenkit.DefaultMaxRetries {
		t.Errorf("server %+v", st)
	}
}
