package cachesim

import (
	"reflect"
	"testing"
	"time"

	history "github.com/histrim/history"
)

// TestReplicasSharingState: three replicas sharing a StateStore send the
// prompts one Trimmer sends, request for request, and bill the same; three
// that share nothing rewrite the prefix more often and bill more; a
// summary is never written twice; with time modelled, a replica that has
// not seen the conversation for a while does not take a warm request for
// a cold resume.
func TestReplicasSharingState(t *testing.T) {
	s := toolSession(30, 4, 2000)
	for _, base := range []Config{
		{Pattern: WithTrimmer, Budget: 20_000, LowWater: 0.7},
		{Pattern: WithTrimmer, Budget: 20_000, Trigger: 0.6, LowWater: 0.36, Ladder: true,
			Elide: history.ElideOptions{KeepRecent: 1, MinTokens: 64}},
		{Pattern: WithTrimmer, Budget: 20_000, LowWater: 0.7, Summarize: true},
		{Pattern: WithTrimmer, Budget: 20_000, LowWater: 0.7, Ladder: true,
			Spacing: time.Minute, IdleEvery: 5, Idle: 2 * time.Hour, Retention: 5 * time.Minute, ColdAfter: 5 * time.Minute},
	} {
		var prompts [][]history.Message
		single := base
		single.OnPrompt = func(_ int, p []history.Message) { prompts = append(prompts, p) }
		one, err := Replay(s, single)
		if err != nil {
			t.Fatal(err)
		}
		shared := base
		shared.Replicas, shared.Seed, shared.State = 3, 7, &history.MemoryStateStore{}
		shared.OnPrompt = func(i int, p []history.Message) {
			if !reflect.DeepEqual(p, prompts[i]) {
				t.Fatalf("request %d: three replicas sharing state sent another prompt", i)
			}
		}
		three, err := Replay(s, shared)
		if err != nil {
			t.Fatal(err)
		}
		alone := base
		alone.Replicas, alone.Seed = 3, 7
		apart, err := Replay(s, alone)
		if err != nil {
			t.Fatal(err)
		}
		if three.Rewrites != one.Rewrites || three.Billed != one.Billed || three.Summaries != one.Summaries || three.ColdResumes != one.ColdResumes {
			t.Fatalf("shared state: rewrites %d, billed %.0f, summaries %d, cold resumes %d; one replica: %d, %.0f, %d, %d",
				three.Rewrites, three.Billed, three.Summaries, three.ColdResumes, one.Rewrites, one.Billed, one.Summaries, one.ColdResumes)
		}
		if three.States[history.StateRestored] == 0 {
			t.Fatalf("no event restored another replica's state: %v", three.States)
		}
		if apart.Rewrites <= one.Rewrites || apart.Billed <= one.Billed {
			t.Fatalf("replicas sharing nothing: rewrites %d, billed %.0f; one replica: %d, %.0f", apart.Rewrites, apart.Billed, one.Rewrites, one.Billed)
		}
		if base.Summarize && apart.Summaries <= one.Summaries {
			t.Fatalf("replicas sharing nothing wrote %d summaries, one replica %d", apart.Summaries, one.Summaries)
		}
		if base.ColdAfter > 0 && apart.ColdResumes <= one.ColdResumes {
			t.Fatalf("replicas sharing nothing: %d cold resumes, one replica %d", apart.ColdResumes, one.ColdResumes)
		}
		t.Logf("one: %d rewrites, %.0f billed, %d summaries, %d cold resumes; shared: same; apart: %d, %.0f, %d, %d",
			one.Rewrites, one.Billed, one.Summaries, one.ColdResumes, apart.Rewrites, apart.Billed, apart.Summaries, apart.ColdResumes)
	}
}
