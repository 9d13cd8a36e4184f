package loopserver

import (
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/histrim/history"
)

// The loop of the example programs (examples/agent, examples/agentloop):
// ExampleTurns user turns against a local server with a window of
// ExampleWindow tokens that counts ExampleFactor times the library's
// estimate.
const (
	ExampleWindow = 16_000
	ExampleTurns  = 30
	ExampleFactor = 1.3
)

// ExampleOpenAI starts the examples' local OpenAI chat-completions
// server; close ts when done. Its base URL for an OpenAI client is
// ts.URL + "/v1".
func ExampleOpenAI() (*OpenAI, *httptest.Server) {
	srv := &OpenAI{Judge: Skew{Window: ExampleWindow, Factor: ExampleFactor}, Window: ExampleWindow}
	return srv, httptest.NewServer(srv)
}

// ExampleGemini starts the examples' local Gemini server; close ts when
// done. Its base URL for a genai client is ts.URL.
func ExampleGemini() (*Gemini, *httptest.Server) {
	srv := &Gemini{Judge: Skew{Window: ExampleWindow, Factor: ExampleFactor}, Window: ExampleWindow}
	return srv, httptest.NewServer(srv)
}

// Report prints what an example's loop ends with: the turns, what the
// runtime kept (kept, such as "412 messages kept whole by the agent"),
// the server's counts, the trims, the turns that failed and what cal
// learnt of the provider's count (nothing when cal is nil: a loop through
// an adapter's door, whose Trimmer owns its Calibration). It returns an
// error when the provider rejected a request other than for its length,
// or a turn failed.
func Report(st Stats, kept string, trims, failed int, cal *history.Calibration) error {
	fmt.Printf("%d turns, %s: %d requests, %d trims, %d rejected for length (recovered), %d pairing errors, %d failed turns\n",
		ExampleTurns, kept, st.Requests, trims, st.Overflows, st.PairingErrors, failed)
	if cal != nil {
		scale, overhead, _, _ := cal.Model()
		fmt.Printf("calibration learnt the provider's count: %.3fx%+.0f tokens\n", scale, overhead)
	}
	if st.PairingErrors > 0 || st.BadRequests > 0 || failed > 0 {
		return errors.New("the provider rejected requests, or turns failed")
	}
	return nil
}
