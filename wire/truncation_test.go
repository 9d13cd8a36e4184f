package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/storekit"
)

// sharedStore is a Store that shares each model's Calibration, as
// stores/redis and stores/postgres do (over storekit, as they do), kept in
// memory: the replicas of a deployment in one process.
type sharedStore struct {
	history.MemoryStateStore
	cals history.MemoryStateStore
	// fail, when set, fails every Load and Save of the conversations'
	// keyspace (a store that is down).
	fail bool
}

func (s *sharedStore) Load(ctx context.Context, key string) ([]byte, int64, error) {
	if s.fail {
		return nil, 0, errors.New("store down")
	}
	return s.MemoryStateStore.Load(ctx, key)
}

func (s *sharedStore) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	if s.fail {
		return 0, errors.New("store down")
	}
	return s.MemoryStateStore.Save(ctx, key, state, version)
}

func (s *sharedStore) LoadCalibration(ctx context.Context, model string, cal *history.Calibration) error {
	return storekit.LoadCalibration(ctx, &s.cals, "mem", model, cal)
}

func (s *sharedStore) ObserveShared(ctx context.Context, model string, sent, reported int) (history.Verdict, error) {
	return storekit.ObserveShared(ctx, &s.cals, "mem", model, sent, reported)
}

func (s *sharedStore) ObserveOverflowShared(ctx context.Context, model string, sent, limit int) error {
	return storekit.ObserveOverflowShared(ctx, &s.cals, "mem", model, sent, limit)
}

// promptsAnswer answers each request with the prompt count of its turn in
// prompts (the last one past the end).
func promptsAnswer(prompts ...int) func(w http.ResponseWriter, body []byte, n int) {
	return func(w http.ResponseWriter, _ []byte, n int) {
		p := prompts[min(n, len(prompts))-1]
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":%d}}`, p)
	}
}

// TestSilentTruncationReplicas: replicas sharing a Store learn a silent
// truncation's window at the response one Transport would, and then send
// the requests it would, byte for byte, whichever replica each request
// reaches; a response that read the whole prompt in between, at any
// replica, leaves the truncation before it unconfirmed. Each case with
// its reason. (Before, each replica kept what it saw: the second
// truncation, seen by another replica than the first, taught nothing,
// and the request after it went out whole.)
func TestSilentTruncationReplicas(t *testing.T) {
	body := chatBody(20, 200) // about 12k tokens
	cases := []struct {
		name    string
		prompts []int  // the upstream's counts, request by request
		route   []int  // the replica each request reaches
		learnt  []bool // whether each request's response taught the window
		down    bool   // the store fails every call
	}{
		{"two truncations at two replicas agree: the third request, at either, is trimmed to the window",
			[]int{2048, 2100, 2048}, []int{0, 1, 0}, []bool{false, true, false}, false},
		{"a whole count at another replica in between: the truncation before it is forgotten",
			[]int{2048, 12000, 2048, 2048}, []int{0, 1, 0, 1}, []bool{false, false, false, true}, false},
		{"a store that is down: each replica learns from what it sees",
			[]int{2048, 2048, 2048, 2048}, []int{0, 1, 0, 1}, []bool{false, false, true, true}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// One Transport, then replicas over one shared store; both
			// against an upstream giving the same counts.
			run := func(replicas int, store func() history.StateStore) (sent [][]byte, learnt []bool) {
				up := &recorder{answer: promptsAnswer(c.prompts...)}
				ts := httptest.NewServer(up)
				defer ts.Close()
				var mu sync.Mutex
				var evs []Event
				trs := make([]*Transport, replicas)
				for i := range trs {
					trs[i] = &Transport{Models: fixedModel(128_000), Logger: quiet(), Store: store(),
						OnEvent: func(e Event) {
							if e.Kind == EventTruncation {
								mu.Lock()
								evs = append(evs, e)
								mu.Unlock()
							}
						}}
				}
				for i := range c.prompts {
					n := len(evs)
					post(t, trs[c.route[i]%replicas], ts.URL+"/v1/chat/completions", body)
					learnt = append(learnt, len(evs) > n && evs[len(evs)-1].Learnt)
				}
				return up.bodies, learnt
			}
			shared := &sharedStore{fail: c.down}
			one, learntOne := run(1, func() history.StateStore { return &sharedStore{} })
			two, learntTwo := run(2, func() history.StateStore { return shared })
			if fmt.Sprint(learntTwo) != fmt.Sprint(c.learnt) {
				t.Errorf("responses that taught the window at the replicas: %v, want %v", learntTwo, c.learnt)
			}
			if c.down {
				return // each replica alone: not what one Transport sends
			}
			if fmt.Sprint(learntOne) != fmt.Sprint(c.learnt) {
				t.Errorf("responses that taught the window at one Transport: %v, want %v", learntOne, c.learnt)
			}
			for i := range one {
				if !bytes.Equal(one[i], two[i]) {
					t.Errorf("request %d: %d bytes from one Transport, %d from the replicas", i, len(one[i]), len(two[i]))
				}
			}
			last := two[len(two)-1]
			if c.learnt[len(c.learnt)-2] && len(last) >= len(body) {
				t.Errorf("the request after the window was learnt went out whole (%d bytes)", len(last))
			}
		})
	}
}
