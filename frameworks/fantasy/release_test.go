package fantasy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"charm.land/fantasy"
	"github.com/histrim/history"
	hfantasy "github.com/histrim/history/frameworks/fantasy"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
)

// TestStateReleased: nothing a Model keeps for a call outlives it when
// the provider fails: 400 agent calls each holding 24 KB, generated and
// streamed, refused (an invalid request; an overflow nothing can be
// dropped from), leave no heap and no goroutine behind (a stream's
// reader included) (adaptertest.Released).
func TestStateReleased(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"model error", `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":null}}`},
		{"overflow not recovered", fmt.Sprintf(loopserver.OpenAIOverflowBody, 10, 900_000)},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, stream %v", tc.name, stream), func(t *testing.T) {
				ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					adaptertest.Answer(w, http.StatusBadRequest, "", "application/json", tc.body)
				}))
				defer ts.Close()
				m := hfantasy.NewModel(languageModel(t, ts.URL+"/v1"), hfantasy.Config{Budget: 100_000, Calibration: &history.Calibration{}})
				agent := fantasy.NewAgent(m, fantasy.WithTools(tools(loopserver.Words(10, 20))...))
				big := strings.Repeat("lorem ipsum ", 2000)
				adaptertest.Released(t, 400, func(i int) {
					var err error
					if stream {
						_, err = agent.Stream(context.Background(), fantasy.AgentStreamCall{Prompt: big + strconv.Itoa(i)})
					} else {
						_, err = agent.Generate(context.Background(), fantasy.AgentCall{Prompt: big + strconv.Itoa(i)})
					}
					if err == nil {
						t.Fatalf("call %d did not fail", i)
					}
				}, nil)
			})
		}
	}
}
