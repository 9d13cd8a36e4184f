package genkit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/histrim/history"
	hgenkit "github.com/histrim/history/frameworks/genkit"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
)

// TestStateReleased: nothing the Middleware keeps for a generation
// outlives it when the model fails: 200 generations each holding 24 KB,
// refused by Gemini (an invalid request; an overflow nothing can be
// dropped from), leave no heap and no goroutine behind
// (adaptertest.Released).
func TestStateReleased(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"model error", `{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}`},
		{"overflow not recovered", `{"error":{"code":400,"message":"The input token count (900000) exceeds the maximum number of tokens allowed (10).","status":"INVALID_ARGUMENT"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				adaptertest.Answer(w, http.StatusBadRequest, "", "application/json", tc.body)
			}))
			defer ts.Close()
			g, tools := newGenkit(t, ts.URL, loopserver.Words(10, 20))
			mw := hgenkit.Middleware(hgenkit.Config{Budget: 100_000, Calibration: &history.Calibration{}})
			big := strings.Repeat("lorem ipsum ", 2000)
			adaptertest.Released(t, 200, func(i int) {
				_, err := genkit.Generate(context.Background(), g, ai.WithModelName(modelName), ai.WithTools(tools...),
					ai.WithMessages(ai.NewUserTextMessage(big+strconv.Itoa(i))), ai.WithMiddleware(mw))
				if err == nil {
					t.Fatalf("generation %d did not fail", i)
				}
			}, nil)
		})
	}
}
