package trpc

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// MaxRetries is how many times a model wrapped by Wrap resends a request
// the provider rejected for its length.
const MaxRetries = 2

// slotKey is the context key of the slot through which a wrapped model and
// its Strategy share one request's figures.
type slotKey struct{}

// slot is what a Strategy tells the model wrapped around it about one
// call: what the request is trimmed with (the door's for the model's
// name, or the Strategy's Config) and the overhead the model counted
// (set before the call), and the budget and Result of the trim behind
// what was sent.
type slot struct {
	call     call
	overhead int

	mu     sync.Mutex
	res    *history.Result
	budget int
}

func (s *slot) setBudget(budget int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.budget = budget
}

func (s *slot) lastBudget() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budget
}

func (s *slot) set(res history.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res = &res
}

func (s *slot) take() *history.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res
	s.res = nil
	return r
}

// Model is a model.Model wrapped by Wrap.
type Model struct {
	inner model.Model
	s     *Strategy
}

// Wrap returns inner wrapped so that, with s as its tailoring strategy:
//
//   - every request is trimmed through the door of the model inner names
//     (inner.Info().Name, or s's Config.Model; see Config.Model): its
//     budget bounded by the model's, counted with its counter, calibrated
//     with its Calibration, under the task preset; an unknown
//     Config.Model fails the call before anything is sent;
//   - every trim counts the request's tools (their declarations, as one
//     system message) as overhead, so its Result counts the whole request;
//   - a response that reports the request's usage is observed by the
//     Calibration of the request's trim (Config.Calibration, or the
//     door's for the model) (usage.PromptTokens against the trim's
//     Result.TokensAfter);
//   - a request the provider rejected for its length
//     (history.IsContextOverflow of the response's error) is trimmed with
//     history.RecoverOverflow below what the provider said, and resent, at
//     most MaxRetries times; the rejection is not passed on. A rejection
//     that cannot be recovered (nothing left to drop, or a third one) is
//     passed on as it came. After a recovery, what the provider stated
//     bounds every later budget the Strategy trims a request to the same
//     model to, for the Strategy's life, as an adapter's Trimmer keeps it:
//     a context window told above the provider's real one is refused
//     once, not at every request.
//
// inner must be a model whose tailoring strategy is s (trpc-agent-go's
// openai.WithTailoringStrategy, with openai.WithEnableTokenTailoring):
// the retry sends what RecoverOverflow returned through it, and s trims it
// again to the calibrated budget. With a nil s, Wrap only recovers. The
// request's Messages become what the first attempt sent, as inner's own
// tailoring makes them; retries send copies of the request.
func Wrap(inner model.Model, s *Strategy) *Model { return &Model{inner: inner, s: s} }

// Info returns the inner model's Info.
func (m *Model) Info() model.Info { return m.inner.Info() }

// GenerateContent sends request through the inner model, recovering from
// overflows and observing usage (see Wrap).
func (m *Model) GenerateContent(ctx context.Context, request *model.Request) (<-chan *model.Response, error) {
	if request == nil {
		return m.inner.GenerateContent(ctx, request)
	}
	c := call{counter: history.Heuristic()} // without a Strategy: recovery alone
	if m.s != nil {
		output := 0
		if request.MaxTokens != nil {
			output = *request.MaxTokens
		}
		var err error
		if c, err = m.s.plan(m.inner.Info().Name, output); err != nil {
			return nil, err // Config.Model is unknown: nothing is sent
		}
	}
	sl := &slot{call: c, overhead: m.overhead(request, c.counter)}
	ctx = context.WithValue(ctx, slotKey{}, sl)
	first, err := m.inner.GenerateContent(ctx, request)
	if err != nil {
		return nil, err
	}
	// A retry sends a copy of the request, taken now: once the channel is
	// returned, the caller's flow reads the request while the responses
	// arrive, so it is never written to again.
	retry := *request
	out := make(chan *model.Response, 1)
	go func() {
		defer close(out)
		emit := func(r *model.Response) bool {
			select {
			case out <- r:
				return true
			case <-ctx.Done():
				return false
			}
		}
		ch := first
		for attempt := 1; ; attempt++ {
			res := sl.take()
			overflow, ok := m.forward(ch, res, sl, attempt, emit)
			if !ok || overflow == nil {
				return
			}
			msgs, ok := m.recover(retry.Messages, overflow.Error, attempt, sl)
			if !ok {
				emit(overflow)
				return
			}
			retry.Messages = msgs
			if ch, err = m.inner.GenerateContent(ctx, &retry); err != nil {
				emit(overflow)
				return
			}
		}
	}()
	return out, nil
}

// forward passes ch's responses on, observing the usage of the final one
// into the calibration, and returns the response that rejected the
// request for its length when it is retried (attempt <= MaxRetries,
// before anything was passed on), instead of passing it on. ok is false
// when the caller stopped listening.
func (m *Model) forward(ch <-chan *model.Response, res *history.Result, sl *slot, attempt int, emit func(*model.Response) bool) (overflow *model.Response, ok bool) {
	sent := false
	for r := range ch {
		if r != nil && r.Error != nil && !sent && attempt <= MaxRetries && history.IsContextOverflow(r.Error) {
			overflow = r
			continue // drain: the inner model closes ch after its error
		}
		if r != nil && r.Usage != nil && !r.IsPartial && r.Error == nil && m.s != nil && res != nil {
			adapt.Observe(sl.call.cal, res.TokensAfter, r.Usage.PromptTokens, m.s.onObserve)
		}
		sent = true
		if !emit(r) {
			for range ch {
			}
			return nil, false
		}
	}
	return overflow, true
}

// recover returns what history.RecoverOverflow keeps of sent, the
// messages of a request rejected with providerErr, and whether the request
// should be resent with them; what the provider said then bounds the
// Strategy's later budgets for the model (Strategy.limits).
func (m *Model) recover(sent []model.Message, providerErr error, attempt int, sl *slot) ([]model.Message, bool) {
	opts := append(slices.Clip(sl.call.opts), history.WithOverhead(sl.overhead))
	hist, err := convert(sent, opts)
	if err != nil {
		return nil, false
	}
	rec, err := history.RecoverOverflow(hist, providerErr, attempt, opts...)
	if err != nil { // not an overflow after all, or nothing left to drop
		return nil, false
	}
	if m.s != nil {
		m.s.limits.Learn(sl.call.model, providerErr, sl.lastBudget(), rec.Budget, sl.call.cal)
	}
	return apply(sent, rec), true
}

// overhead counts the request's tool declarations with c (the counter of
// the request's trim), as the "tools" of an OpenAI-style request.
func (m *Model) overhead(request *model.Request, c history.Counter) int {
	if len(request.Tools) == 0 {
		return 0
	}
	names := make([]string, 0, len(request.Tools))
	for name := range request.Tools {
		names = append(names, name)
	}
	slices.Sort(names) // deterministic, as no map order may leak
	type function struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Parameters  any    `json:"parameters,omitempty"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	tools := make([]tool, 0, len(names))
	for _, name := range names {
		t := request.Tools[name]
		if t == nil {
			continue
		}
		d := t.Declaration()
		if d == nil {
			continue
		}
		tools = append(tools, tool{Type: "function", Function: function{Name: d.Name, Description: d.Description, Parameters: d.InputSchema}})
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		return 0
	}
	return max(c.CountMessage(history.Message{Role: history.RoleSystem, Content: string(raw)}), 0)
}
