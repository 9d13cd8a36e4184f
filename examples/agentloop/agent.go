package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/histrim/history"
)

// APIError is the client's view of a non-200 answer: the HTTP status and
// OpenAI's error object. Its Error() carries the provider's message and code,
// as the error of an SDK would, and StatusCode exposes the status, which
// history.IsContextOverflow consults.
type APIError struct {
	Status  int
	Type    string
	Code    string
	Param   string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("openai: status %d: %s (type=%s param=%s code=%s)", e.Status, e.Message, e.Type, e.Param, e.Code)
}

// StatusCode returns the HTTP status of the answer.
func (e *APIError) StatusCode() int { return e.Status }

// Agent is a minimal tool-calling agent runtime: it keeps the working
// history, trims it to Budget before every request, and recovers from
// length rejections with history.RecoverOverflow.
type Agent struct {
	URL         string
	Client      *http.Client
	Budget      int // tokens, by the library's Heuristic count
	MaxAttempts int // recoveries per request before giving up
	// OnEvent receives every trim event (budget and overflow).
	OnEvent func(turn int, ev history.Event)
	// Calibration, when set, learns from every response's usage how the
	// provider's count relates to the library's, so that trims aim at the
	// budget the provider counts (history.WithCalibration).
	Calibration *history.Calibration

	history []history.Message
	sent    int // the library's count of what was last sent (Result.TokensAfter)
	stats   AgentStats
}

// AgentStats counts what the runtime did.
type AgentStats struct {
	Turns, Requests              int
	LengthRejections             int // overflow errors received
	Recoveries                   int // RecoverOverflow calls that let the request be retried
	RecoveredRequests            int // requests that succeeded after at least one overflow
	MaxAttempts                  int // most recoveries one request needed
	Unrecovered                  int // requests abandoned with ErrCannotRecover or too many attempts
	OtherErrors                  int
	TrimmedResults               int // Results with Trimmed set, from either entry point
	Events                       int
	BudgetEvents, OverflowEvents int
	Archived                     int // messages dropped from the working history
	// ProviderPrompt sums the provider's count (usage.prompt_tokens) of the
	// accepted requests that were trimmed, TrimmedAccepted counts them: their
	// mean shows whether trims kept as much as the provider allowed.
	ProviderPrompt, TrimmedAccepted int
}

// NewAgent returns an agent with a system prompt.
func NewAgent(url string, budget int) *Agent {
	return &Agent{
		URL: url, Client: http.DefaultClient, Budget: budget, MaxAttempts: 4,
		history: []history.Message{{Role: history.RoleSystem, Content: "You are a coding agent. Use read_file to inspect the repository before answering."}},
	}
}

// Stats returns the counters.
func (a *Agent) Stats() AgentStats { return a.stats }

// RunTurn sends one user message and runs tool calls until the model
// answers.
func (a *Agent) RunTurn(ctx context.Context, turn int, user string) error {
	a.stats.Turns++
	a.history = append(a.history, history.Message{Role: history.RoleUser, Content: user})
	for step := 0; step < 32; step++ {
		reply, err := a.request(ctx, turn)
		if err != nil {
			return err
		}
		a.history = append(a.history, reply)
		if len(reply.ToolCalls) == 0 {
			return nil
		}
		for _, c := range reply.ToolCalls {
			a.history = append(a.history, history.Message{Role: history.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: runTool(c)})
		}
	}
	return errors.New("agentloop: too many steps in one turn")
}

func (a *Agent) options(turn int) []history.Option {
	return []history.Option{
		history.WithCalibration(a.Calibration),
		history.WithLabels(map[string]string{"agent": "agentloop", "turn_id": fmt.Sprint(turn)}),
		history.WithOnTrim(func(ev history.Event) {
			a.stats.Events++
			if ev.Reason == history.ReasonOverflow {
				a.stats.OverflowEvents++
			} else {
				a.stats.BudgetEvents++
			}
			if a.OnEvent != nil {
				a.OnEvent(turn, ev)
			}
		}),
	}
}

// request trims the working history, sends it, and on a length rejection
// trims further with RecoverOverflow and resends. The working history
// becomes what was last sent, so the next request starts from it.
func (a *Agent) request(ctx context.Context, turn int) (history.Message, error) {
	res, err := history.TrimToRecentTurns(a.history, a.Budget, a.options(turn)...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return history.Message{}, err
	}
	a.adopt(res)
	trimmed := res.Trimmed
	for attempt := 1; ; attempt++ {
		reply, prompt, err := a.send(ctx, a.history)
		if err == nil {
			if attempt > 1 {
				a.stats.RecoveredRequests++
			}
			if a.Calibration != nil {
				a.Calibration.Observe(a.sent, prompt)
			}
			if trimmed {
				a.stats.TrimmedAccepted++
				a.stats.ProviderPrompt += prompt
			}
			return reply, nil
		}
		if !history.IsContextOverflow(err) {
			a.stats.OtherErrors++
			return history.Message{}, err
		}
		a.stats.LengthRejections++
		if attempt > a.MaxAttempts {
			a.stats.Unrecovered++
			return history.Message{}, err
		}
		res, rerr := history.RecoverOverflow(a.history, err, attempt, a.options(turn)...)
		if rerr != nil {
			// ErrCannotRecover: surface it (it wraps the provider error).
			a.stats.Unrecovered++
			return history.Message{}, rerr
		}
		a.stats.Recoveries++
		a.stats.MaxAttempts = max(a.stats.MaxAttempts, attempt)
		a.adopt(res)
		trimmed = true
	}
}

// adopt makes a trim result the working history. A real runtime would
// archive res.Dropped; here they are counted.
func (a *Agent) adopt(res history.Result) {
	if res.Trimmed {
		a.stats.TrimmedResults++
	}
	a.stats.Archived += len(res.Dropped)
	a.history = res.Messages
	a.sent = res.TokensAfter
}

// send posts msgs and returns the reply and the provider's count of the
// request (usage.prompt_tokens).
func (a *Agent) send(ctx context.Context, msgs []history.Message) (history.Message, int, error) {
	a.stats.Requests++
	body, err := json.Marshal(wireRequest{Model: "fake-gpt", Messages: toWire(msgs)})
	if err != nil {
		return history.Message{}, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return history.Message{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.Client.Do(req)
	if err != nil {
		return history.Message{}, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return history.Message{}, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		var eb wireErrorBody
		_ = json.Unmarshal(data, &eb)
		e := &APIError{Status: resp.StatusCode, Type: eb.Error.Type, Message: eb.Error.Message}
		if eb.Error.Code != nil {
			e.Code = *eb.Error.Code
		}
		if eb.Error.Param != nil {
			e.Param = *eb.Error.Param
		}
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(data))
		}
		return history.Message{}, 0, e
	}
	var out wireResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return history.Message{}, 0, err
	}
	if len(out.Choices) == 0 {
		return history.Message{}, 0, errors.New("agentloop: no choices")
	}
	return fromWire([]wireMessage{out.Choices[0].Message})[0], out.Usage.PromptTokens, nil
}

// runTool fakes read_file: a file listing whose size depends on the call, a
// few hundred to a couple of thousand bytes.
func runTool(c history.ToolCall) string {
	h := uint32(2166136261)
	for i := 0; i < len(c.ID); i++ {
		h = (h ^ uint32(c.ID[i])) * 16777619
	}
	lines := 8 + int(h%48)
	var b strings.Builder
	for i := range lines {
		fmt.Fprintf(&b, "%4d\tfunc handler%d(w http.ResponseWriter, r *http.Request) { serve(w, r) }\n", i+1, i)
	}
	return b.String()
}

// Script returns the user message of turn i: a task asking for a number of
// tool calls, some of them parallel.
func Script(i int) string {
	calls := 1 + (i*7)%4
	parallel := 1 + i%2
	return fmt.Sprintf("Task %d: inspect the handlers (calls=%d parallel=%d).", i, calls, parallel)
}
