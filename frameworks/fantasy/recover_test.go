package fantasy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"charm.land/fantasy"
	"github.com/histrim/history"
	hfantasy "github.com/histrim/history/frameworks/fantasy"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
)

// chat returns a system prompt and turns user turns of a question and an
// answer of about words words each, and a last question.
func chat(turns, words int) []fantasy.Message {
	msgs := []fantasy.Message{fantasy.NewSystemMessage(loopserver.SystemPrompt)}
	for i := range turns {
		msgs = append(msgs, fantasy.NewUserMessage(fmt.Sprintf("question %d: %s", i, strings.Repeat("why ", words))),
			fantasy.Message{Role: fantasy.MessageRoleAssistant, Content: []fantasy.MessagePart{fantasy.TextPart{Text: strings.Repeat("because ", words)}}})
	}
	return append(msgs, fantasy.NewUserMessage(loopserver.Task(1)))
}

// providerError returns the error fantasy's OpenAI-compatible model
// returns for an HTTP answer of status and body.
func providerError(t *testing.T, status int, body string) error {
	t.Helper()
	return adaptertest.Refusal(t, status, body, func(base string) error {
		_, err := languageModel(t, base+"/v1").Generate(context.Background(), fantasy.Call{Prompt: chat(1, 1)})
		return err
	})
}

// TestRecoverOverflowProviderErrors: the ProviderError fantasy builds from
// the providers' overflow bodies is read by its ContextUsedTokens,
// ContextMaxTokens and IsContextTooLarge, so that a body only fantasy
// parses (Vercel's, Alibaba's) is recovered from too; a rate limit is not
// an overflow.
func TestRecoverOverflowProviderErrors(t *testing.T) {
	msgs := chat(30, 60)
	h, _ := hfantasy.ToHistory(msgs)
	est := history.Estimate(h, nil)
	for _, tc := range []struct {
		status   int
		body     string
		overflow bool
		reason   string
	}{
		{400, fmt.Sprintf(loopserver.OpenAIOverflowBody, est/2, est), true, "OpenAI's body: both sizes"},
		{400, fmt.Sprintf(`{"error":{"message":"Input too long: %d input tokens, limit is %d","type":"invalid_request_error"}}`, est, est/2), true,
			"Vercel's gateway: both sizes, a phrase only fantasy reads"},
		{400, fmt.Sprintf(`{"error":{"message":"Range of input length should be [1, %d]","type":"invalid_request_error"}}`, est/2), true,
			"Alibaba: the limit only, a phrase only fantasy reads"},
		{429, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`, false, "a rate limit"},
	} {
		err := providerError(t, tc.status, tc.body)
		var pe *fantasy.ProviderError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: %T %v", tc.reason, err, err)
		}
		if hfantasy.IsOverflow(err) != tc.overflow {
			t.Errorf("%s: IsOverflow = %v", tc.reason, !tc.overflow)
		}
		out, res, rerr := hfantasy.RecoverOverflow(msgs, err, 1)
		switch {
		case tc.overflow && (rerr != nil || res.DroppedTurns == 0 || len(out) >= len(msgs)):
			t.Errorf("%s: %v, %d turns dropped", tc.reason, rerr, res.DroppedTurns)
		case !tc.overflow && !errors.Is(rerr, history.ErrNotOverflow):
			t.Errorf("%s: %v", tc.reason, rerr)
		}
	}
	// A ProviderError that only says the context is too large: the core
	// shrinks by its own margin.
	pe := &fantasy.ProviderError{Title: "bad request", Message: "request too large", ContextTooLargeErr: true}
	if out, _, err := hfantasy.RecoverOverflow(msgs, fmt.Errorf("step: %w", pe), 1); err != nil || len(out) >= len(msgs) {
		t.Errorf("a bare ContextTooLargeErr: %v", err)
	}
	// Nothing left to drop: the RecoverError still holds the ProviderError.
	_, _, err := hfantasy.RecoverOverflow(chat(0, 1), pe, 1)
	var found *fantasy.ProviderError
	if !errors.Is(err, history.ErrCannotRecover) || !errors.As(err, &found) || found != pe {
		t.Errorf("cannot recover: %v", err)
	}
}

// TestModelRecovers: a provider counting 1.6 times what the Model aims at
// rejects the first request of Generate and of Stream; the Model trims
// what was sent below the sizes the 400 states and resends it, and the
// caller sees the answer only.
func TestModelRecovers(t *testing.T) {
	const window = 4000
	for _, stream := range []bool{false, true} {
		srv := &loopserver.OpenAI{Judge: loopserver.Skew{Window: window, Factor: 1.6}, Window: window}
		ts := httptest.NewServer(srv)
		var cal history.Calibration
		observed := 0
		m := hfantasy.NewModel(languageModel(t, ts.URL+"/v1"), hfantasy.Config{Budget: window, Calibration: &cal,
			OnObserve: func(int, int, history.Verdict) { observed++ }})
		c := fantasy.Call{Prompt: chat(40, 60)}
		if stream {
			s, err := m.Stream(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			for part := range s {
				if part.Type == fantasy.StreamPartTypeError {
					t.Fatalf("stream error %v", part.Error)
				}
			}
		} else if _, err := m.Generate(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		if st := srv.Stats(); st.Overflows != 1 || st.Accepted != 1 || observed != 1 {
			t.Errorf("stream %v: server %+v, %d observations", stream, st, observed)
		}
		ts.Close()
	}
}

// TestModelGivesUp: when only the latest turn is left and still too long,
// the provider's error reaches the caller.
func TestModelGivesUp(t *testing.T) {
	srv := &loopserver.OpenAI{Judge: loopserver.Skew{Window: 100, Factor: 1}, Window: 100}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	m := hfantasy.NewModel(languageModel(t, ts.URL+"/v1"), hfantasy.Config{Budget: 1000})
	msgs := append(chat(3, 100), fantasy.NewUserMessage(strings.Repeat("and then ", 100)))
	_, err := m.Generate(context.Background(), fantasy.Call{Prompt: msgs})
	var pe *fantasy.ProviderError
	if !errors.As(err, &pe) || !pe.IsContextTooLarge() {
		t.Fatalf("error %v", err)
	}
	if st := srv.Stats(); st.Overflows < 2 || st.Overflows > 1+hfantasy.DefaultMaxRetries {
		t.Errorf("server %+v", st)
	}
}
