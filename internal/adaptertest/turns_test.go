package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// scripted is a Runtime whose replies are a script: turn n's task
// "task n" is answered with steps(n) steps of one call each, then a
// reply with none; a task holding "fail" fails its first step.
type scripted struct {
	log   []string // what the runtime was given, in order
	task  string
	step  int
	steps func(task string) int
}

func (s *scripted) User(task string) {
	s.log = append(s.log, "user "+task)
	s.task, s.step = task, 0
}

func (s *scripted) Result(id, text string) { s.log = append(s.log, "result "+id+" "+text) }

func (s *scripted) Step(context.Context) ([]string, int, error) {
	s.log = append(s.log, "step")
	if strings.Contains(s.task, "fail") {
		return nil, 0, errors.New("refused")
	}
	s.step++
	if s.step > s.steps(s.task) {
		return nil, 100, nil
	}
	return []string{fmt.Sprintf("%s/%d", s.task, s.step)}, 100 * s.step, nil
}

// fatal is a testing.TB whose Fatalf ends the goroutine, as testing.T's
// does, and records the message.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}
func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestRunTurns: RunTurns opens each turn with its task (told to the
// Loop), steps until a reply makes no call, answers every call with
// output(id), records each reply accepted and each error (which ends the
// turn), and fails a turn that does not end within MaxSteps requests.
func TestRunTurns(t *testing.T) {
	l := NewLoop("test", Modes()[0], 16_000)
	l.Turns = 3
	rt := &scripted{steps: func(task string) int { return map[string]int{"task 1": 2, "task 3": 0}[task] }}
	RunTurns(t, l, rt, func(n int) string {
		if n == 2 {
			return "task 2 fail"
		}
		return fmt.Sprintf("task %d", n)
	}, func(id string) string { return "out(" + id + ")" })
	want := []string{
		"user task 1", "step", "result task 1/1 out(task 1/1)", "step", "result task 1/2 out(task 1/2)", "step",
		"user task 2 fail", "step",
		"user task 3", "step",
	}
	if !slices.Equal(rt.log, want) {
		t.Errorf("the runtime was given\n%q\nwant\n%q", rt.log, want)
	}
	s := l.Stats()
	if s.Trimmed != 4 || s.TrimmedPrompt != 100+200+100+100 || s.Errors != 1 {
		t.Errorf("stats %+v: want 4 replies accepted (prompts 100, 200, 100, 100) and 1 error", s)
	}
	if l.task != "task 3" || l.turn != 3 {
		t.Errorf("the loop was last told turn %d, %q", l.turn, l.task)
	}

	// A turn whose replies never stop calling.
	endless := &scripted{steps: func(string) int { return 1 << 30 }}
	f := &fatal{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunTurns(f, NewLoop("test", Modes()[0], 16_000), endless, func(n int) string { return fmt.Sprint("task ", n) }, func(string) string { return "" })
	}()
	<-done
	if steps := strings.Count(strings.Join(endless.log, "\n"), "step"); f.msg != "turn 1 does not end" || steps != MaxSteps {
		t.Errorf("an endless turn: %q after %d requests, want the test failed after %d", f.msg, steps, MaxSteps)
	}
}
