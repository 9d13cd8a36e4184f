package adaptertest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
)

// RepeatOptions are the option sets of the repeated-trim driver: custom
// notices (one or both), notices with elision, and the default notices.
func RepeatOptions() [][]history.Option {
	turn := history.Message{Role: history.RoleUser, Content: "[ältere Runden ausgelassen]"}
	step := history.Message{Role: history.RoleUser, Content: "[ältere Schritte ausgelassen]"}
	return [][]history.Option{
		{history.WithBreadcrumb(turn), history.WithStepTrim()},
		{history.WithBreadcrumb(turn), history.WithStepBreadcrumb(step), history.WithStepTrim()},
		{history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[trimmed]"}), history.WithStepTrim(),
			history.WithElision(history.ElideOptions{MinTokens: -1})},
		{history.WithStepTrim()},
	}
}

// Repeat runs an agent loop that replaces its history with each trim's
// output (stored with a.Store, if set), for each of RepeatOptions and
// a.RepeatSets: sixty rounds of one tool step each, a new task every fifteen,
// trimmed to 400 tokens. Every output must pass a.Validate, notices must
// never stack (at most one before the first task, at most one after each
// task) and the latest task must be there exactly once.
//
// The driver knows what each output message is from where it came from,
// not from its text: the trim's Result says which output positions are
// notices it inserted and which input message each other position is, and
// the driver remembers which input messages are tasks and notices of
// earlier rounds. This needs the conversation to convert one for one,
// apart from a leading system prompt the adapter takes separately, which
// the tasks and steps of this driver do.
func (a *Adapter[C]) Repeat(t *testing.T) {
	t.Helper()
	for o, opts := range append(RepeatOptions(), a.RepeatSets...) {
		c := a.Start()
		tags := make([]int, a.Len(c)) // per native message: 0, a task's number, or -1 for a notice
		grow := func(next C, tag int) {
			for range a.Len(next) - a.Len(c) {
				tags = append(tags, tag)
			}
			c = next
		}
		task := 0
		for round := range 60 {
			if round%15 == 0 {
				task++
				grow(a.Task(c, "task "+strconv.Itoa(task)+" "+strings.Repeat("details ", 10)), task)
			}
			grow(a.Step(c, "call_"+strconv.Itoa(round), strings.Repeat("output line\n", 20)), 0)
			out, res, err := a.Trim(c, 400, opts...)
			if err != nil {
				t.Fatalf("options %d, round %d: %v", o, round, err)
			}
			if err := a.Validate(out); err != nil {
				t.Fatalf("options %d, round %d: %v", o, round, err)
			}
			outTags, err := Origins(tags, res, a.Len(out))
			if err != nil {
				t.Fatalf("options %d, round %d: %v", o, round, err)
			}
			if msg := CheckStacking(outTags, task); msg != "" {
				t.Fatalf("options %d, round %d: %s: %s", o, round, msg, JSON(t, out))
			}
			if a.Store != nil {
				out = a.Store(out)
			}
			c, tags = out, outTags
		}
	}
}

// Origins returns the tags of an output of n native messages, given the
// tags of its input and the trim's Result: -1 for a notice the trim
// inserted, the tag of the input message otherwise. The input converts one
// for one, except for leading history messages with no native message (a
// separate system prompt), which Result.Kept holds first: as many as it has
// entries more than n. A nil Kept keeps the tags as they are.
func Origins(tags []int, res history.Result, n int) ([]int, error) {
	if res.Kept == nil {
		if n != len(tags) {
			return nil, fmt.Errorf("untrimmed output of %d messages for %d", n, len(tags))
		}
		return tags, nil
	}
	off := len(res.Kept) - n
	if off < 0 {
		return nil, fmt.Errorf("%d native messages for %d Kept entries", n, len(res.Kept))
	}
	out := make([]int, n)
	for j := range out {
		k := res.Kept[off+j]
		switch {
		case k < 0:
			out[j] = -1
		case k-off < 0 || k-off >= len(tags):
			return nil, fmt.Errorf("output %d comes from history message %d, which is no native message", j, k)
		default:
			out[j] = tags[k-off]
		}
	}
	return out, nil
}

// CheckStacking checks the tags of a trimmed output (see Origins) against
// the repeated-trim rules and returns what is wrong, or "": at most one
// notice before the first task and after each task, and the task numbered
// latest exactly once.
func CheckStacking(tags []int, latest int) string {
	notices, latestSeen := 0, 0
	for _, tag := range tags {
		switch {
		case tag < 0:
			notices++
			if notices > 1 {
				return "notices stack"
			}
		case tag > 0:
			notices = 0
			if tag == latest {
				latestSeen++
			}
		}
	}
	if latestSeen != 1 {
		return "the latest task appears " + strconv.Itoa(latestSeen) + " times"
	}
	return ""
}
