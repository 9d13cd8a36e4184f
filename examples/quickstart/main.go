// Command quickstart trims a real agent transcript (an airline support
// agent with tool calls, shipped beside this file) to a small token budget
// and prints what was kept, the trim event and the token math.
//
//	go run ./examples/quickstart
//
// The transcript comes from sierra-research/tau-bench (MIT license),
// historical_trajectories/gpt-4o-airline.json, normalized to one
// history.Message per line; see README.md in this folder.
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/histrim/history"
)

//go:embed transcript.jsonl
var transcript []byte

const budget = 3000

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run is the whole program, writing to w.
func run(w io.Writer) error {
	msgs, err := readJSONL(transcript)
	if err != nil {
		return err
	}
	total := history.Estimate(msgs, nil)
	fmt.Fprintf(w, "transcript: %d messages, %d turns, about %d tokens (heuristic counter)\n",
		len(msgs), len(history.Turns(msgs)), total)
	for i, t := range history.Turns(msgs) {
		fmt.Fprintf(w, "  turn %d: messages %2d-%2d  %5d tokens  %q\n",
			i+1, t.Start, t.End-1, history.Estimate(msgs[t.Start:t.End], nil), clip(msgs[t.Start].Content, 50))
	}

	fmt.Fprintf(w, "\ntrimming to a budget of %d tokens\n", budget)
	res, err := history.TrimToRecentTurns(msgs, budget,
		history.WithLabels(map[string]string{"session_id": "quickstart"}),
		history.WithOnTrim(func(e history.Event) {
			ev, _ := json.Marshal(e)
			fmt.Fprintf(w, "event: %s\n", ev)
			if e.TokensBefore < 0 {
				fmt.Fprintln(w, "  (tokens_before -1: the trim counts newest first and stops once it knows what to keep,")
				fmt.Fprintln(w, "   so the dropped part was never counted; history.WithFullCount() counts it all)")
			}
		}))
	switch {
	case errors.Is(err, history.ErrLatestTurnTooLarge):
		fmt.Fprintln(w, "warning:", err)
	case err != nil:
		return err
	}

	fmt.Fprintf(w, "\nkept %d of %d messages:\n", len(res.Messages), len(msgs))
	for i, m := range res.Messages {
		from := fmt.Sprintf("#%d", res.Kept[i])
		if res.Kept[i] < 0 {
			from = "new"
		}
		text := m.Content
		if len(m.ToolCalls) > 0 {
			text = "calls " + m.ToolCalls[0].Name + " " + m.ToolCalls[0].Arguments
		}
		fmt.Fprintf(w, "  %-4s %-9s %5d tok  %s\n", from, m.Role, history.Heuristic().CountMessage(m), clip(text, 60))
	}

	before := fmt.Sprint(res.TokensBefore)
	if res.TokensBefore < 0 {
		before = fmt.Sprintf("not counted (a trim does not count what it drops; the estimate above says %d)", total)
	}
	fmt.Fprintf(w, "\ntoken math: before %s, after %d (budget %d): %d turn(s) and %d message(s) dropped, %d turn(s) kept\n",
		before, res.TokensAfter, res.Budget, res.DroppedTurns, res.DroppedMessages, res.KeptTurns)
	fmt.Fprintf(w, "dropped messages handed back for archiving: %d; orphans swept: %d\n", len(res.Dropped), res.OrphansRemoved)
	return nil
}

func readJSONL(data []byte) ([]history.Message, error) {
	var msgs []history.Message
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var m history.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, sc.Err()
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
