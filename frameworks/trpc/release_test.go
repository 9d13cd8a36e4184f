package trpc_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histrim/history"
	htrpc "github.com/histrim/history/frameworks/trpc"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// TestStateReleased: nothing Wrap and the Strategy keep for a request
// (the slot they share, the goroutine that forwards the responses)
// outlives it when the provider fails: 400 requests each holding 24 KB,
// refused (an invalid request; an overflow nothing can be dropped from),
// leave no heap and no goroutine behind (adaptertest.Released).
func TestStateReleased(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"model error", `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":null}}`},
		{"overflow not recovered", fmt.Sprintf(loopserver.OpenAIOverflowBody, 10, 900_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				adaptertest.Answer(w, http.StatusBadRequest, "", "application/json", tc.body)
			}))
			defer ts.Close()
			s := htrpc.NewStrategy(htrpc.Config{Calibration: &history.Calibration{}})
			m := newModel(ts.URL+"/v1", 100_000, s)
			big := strings.Repeat("lorem ipsum ", 2000)
			adaptertest.Released(t, 400, func(i int) {
				req := &model.Request{Messages: []model.Message{model.NewUserMessage(fmt.Sprint(big, i))}}
				ch, err := m.GenerateContent(context.Background(), req)
				failed := err != nil
				if err == nil {
					for r := range ch {
						failed = failed || r != nil && r.Error != nil
					}
				}
				if !failed {
					t.Fatalf("request %d did not fail", i)
				}
			}, nil)
		})
	}
}
