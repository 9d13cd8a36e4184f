package adk_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history/adapters/gemini"
	hadk "github.com/histrim/history/frameworks/adk"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/genai"
)

// Gemini's answers the tests' local endpoints give to every request.
const (
	invalidBody  = `{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}`
	overflowBody = `{"error":{"code":400,"message":"The input token count (900000) exceeds the maximum number of tokens allowed (10).","status":"INVALID_ARGUMENT"}}`
	answerBody   = `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],` +
		`"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":1,"totalTokenCount":11}}`
)

// answering returns a local Gemini endpoint that answers every request
// with status and body.
func answering(t testing.TB, status int, body string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		adaptertest.Answer(w, status, "", "application/json", body)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestStateReleased: the callbacks keep what they learn of a model call
// (the count of what was sent) until its response; when the model fails
// and ADK calls no AfterModel, they must not keep it beyond the call.
// 400 invocations each holding 24 KB, failed by Gemini (an invalid
// request; an overflow nothing can be dropped from), leave nothing
// behind: they kept every request's Result before (issue 33: +193 MB).
func TestStateReleased(t *testing.T) {
	for _, tc := range []struct{ name, body string }{{"model error", invalidBody}, {"overflow not recovered", overflowBody}} {
		t.Run(tc.name, func(t *testing.T) {
			m := geminiModel(t, answering(t, http.StatusBadRequest, tc.body).URL)
			cb, err := hadk.New(hadk.Config{Budget: 100_000, Model: m})
			if err != nil {
				t.Fatal(err)
			}
			p, err := cb.Plugin()
			if err != nil {
				t.Fatal(err)
			}
			r, sessions := newRunner(t, m, loopserver.Words(10, 20), func(_ *llmagent.Config, rc *runner.Config) {
				rc.PluginConfig.Plugins = []*plugin.Plugin{p}
			})
			big := strings.Repeat("lorem ipsum ", 2000)
			ctx := context.Background()
			adaptertest.Released(t, 400, func(i int) {
				id := "s" + strconv.Itoa(i)
				failed := false
				for _, err := range r.Run(ctx, "user", id, genai.NewContentFromText(big+id, genai.RoleUser), agent.RunConfig{}) {
					failed = failed || err != nil
				}
				if !failed {
					t.Fatalf("invocation %d did not fail", i)
				}
				if err := sessions.Delete(ctx, &session.DeleteRequest{AppName: "loop", UserID: "user", SessionID: id}); err != nil {
					t.Fatal(err)
				}
			}, func() int { return hadk.Pending(cb) })
		})
	}
}

// recordingLLM is a model that records how many contents each request
// it is given holds, and with keep the contents of the latest, before
// passing it on (ADK's Gemini model appends to them).
type recordingLLM struct {
	model.LLM
	keep     bool
	mu       sync.Mutex
	sizes    []int
	contents []*genai.Content
}

func (m *recordingLLM) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	m.mu.Lock()
	m.sizes = append(m.sizes, len(req.Contents))
	if m.keep {
		m.contents = append([]*genai.Content{}, req.Contents...)
	}
	m.mu.Unlock()
	if slices.ContainsFunc(req.Contents, func(c *genai.Content) bool { return c == nil || slices.Contains(c.Parts, nil) }) {
		// The callbacks pass on what does not convert as it came, and
		// the genai client panics on a nil content or part.
		return func(yield func(*model.LLMResponse, error) bool) { yield(nil, errors.New("a nil content or part")) }
	}
	return m.LLM.GenerateContent(ctx, req, stream)
}

// last returns the contents of the latest request, nil when there was
// none.
func (m *recordingLLM) last() []*genai.Content {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.contents
}

func (m *recordingLLM) seen() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sizes)
}

// TestNeverNoContents: a session holding only the agent's own model
// message gives a request of one model content, which the trim drops
// (Gemini's contents start with a user turn). A request without
// contents is one Gemini refuses ("contents is not specified"): the
// callbacks send the request as it came and report
// gemini.ErrNoContents, and do not resend an empty request after an
// overflow either. They sent none (issue 33, item 8).
func TestNeverNoContents(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
	}{{"answered", answerBody, http.StatusOK}, {"overflow", overflowBody, http.StatusBadRequest}} {
		t.Run(tc.name, func(t *testing.T) {
			m := &recordingLLM{LLM: geminiModel(t, answering(t, tc.status, tc.body).URL)}
			var reported []error
			cb, err := hadk.New(hadk.Config{Budget: 100_000, Model: m, OnError: func(err error) { reported = append(reported, err) }})
			if err != nil {
				t.Fatal(err)
			}
			p, err := cb.Plugin()
			if err != nil {
				t.Fatal(err)
			}
			r, sessions := newRunner(t, m, loopserver.Words(10, 20), func(_ *llmagent.Config, rc *runner.Config) {
				rc.PluginConfig.Plugins = []*plugin.Plugin{p}
			})
			ctx := context.Background()
			created, err := sessions.Create(ctx, &session.CreateRequest{AppName: "loop", UserID: "user", SessionID: "s"})
			if err != nil {
				t.Fatal(err)
			}
			ev := session.NewEventWithContext(ctx, "seed")
			ev.Author = "coder"
			ev.Content = genai.NewContentFromText("Hello, what shall we do today?", genai.RoleModel)
			if err := sessions.AppendEvent(ctx, created.Session, ev); err != nil {
				t.Fatal(err)
			}
			for range r.Run(ctx, "user", "s", nil, agent.RunConfig{}) {
			}
			sizes := m.seen()
			if len(sizes) == 0 || slices.Contains(sizes, 0) {
				t.Errorf("the model was given requests of %v contents; want at least one each", sizes)
			}
			if !slices.ContainsFunc(reported, func(err error) bool { return errors.Is(err, gemini.ErrNoContents) }) {
				t.Errorf("reported %v; want gemini.ErrNoContents", reported)
			}
		})
	}
}

// TestStateBounded: when a callback after these answers in the model's
// place, ADK calls neither the model nor any AfterModel or OnModelError:
// the plugin releases the invocation's figures when the run ends
// (AfterRun); callbacks installed on an agent, which see no run end,
// keep at most two generations of figures (here of 16), whatever the
// number of such calls.
func TestStateBounded(t *testing.T) {
	defer hadk.SetMaxPending(16)()
	answer := func(agent.CallbackContext, *model.LLMRequest) (*model.LLMResponse, error) {
		return &model.LLMResponse{Content: genai.NewContentFromText("cached", genai.RoleModel)}, nil
	}
	m := geminiModel(t, answering(t, http.StatusOK, answerBody).URL)
	for _, asPlugin := range []bool{true, false} {
		cb, err := hadk.New(hadk.Config{Budget: 100_000, Model: m})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := newRunner(t, m, loopserver.Words(10, 20), func(ac *llmagent.Config, rc *runner.Config) {
			if asPlugin {
				p, err := cb.Plugin()
				if err != nil {
					t.Fatal(err)
				}
				rc.PluginConfig.Plugins = []*plugin.Plugin{p}
			} else {
				cb.Install(ac)
			}
			ac.BeforeModelCallbacks = append(ac.BeforeModelCallbacks, answer)
		})
		most := 0
		for i := range 100 {
			for _, err := range r.Run(context.Background(), "user", "s"+strconv.Itoa(i), genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
				if err != nil {
					t.Fatal(err)
				}
			}
			most = max(most, hadk.Pending(cb))
		}
		if want := map[bool]int{true: 0, false: 32}[asPlugin]; most > want {
			t.Errorf("plugin %v: up to %d figures kept over 100 invocations, want at most %d", asPlugin, most, want)
		}
	}
}
