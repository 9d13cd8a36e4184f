package quality

import (
	"bufio"
	"hash/fnv"
	"os"
	"slices"
	"strconv"
	"strings"

	history "github.com/histrim/history"
	"github.com/histrim/history/internal/refs"
)

// Sample is one reference drawn for judging, with its key.
type Sample struct {
	Session string
	Ref     Ref
}

// Key identifies a sample in a judgement file: session, T, R and the
// reference's first token, tab-separated.
func (s Sample) Key() string {
	return s.Session + "\t" + strconv.Itoa(s.Ref.T) + "\t" + strconv.Itoa(s.Ref.R) + "\t" + s.Ref.Tokens[0]
}

// Draw returns n references of sessions drawn by a fixed hash of their
// keys: the same corpus always gives the same sample.
func Draw(sessions []Session, n int) []Sample {
	type keyed struct {
		h uint64
		s Sample
	}
	var all []keyed
	for _, s := range sessions {
		for _, r := range s.Refs {
			sm := Sample{Session: s.Name, Ref: r}
			h := fnv.New64a()
			h.Write([]byte(sm.Key()))
			all = append(all, keyed{h.Sum64(), sm})
		}
	}
	slices.SortFunc(all, func(a, b keyed) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return 0
	})
	out := make([]Sample, 0, n)
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].s)
	}
	return out
}

// Describe returns a sample as text for judging: the call that produced
// R, the lines of R and of the message at T that hold each token.
func Describe(s Sample, msgs []history.Message) string {
	var b strings.Builder
	r, t := &msgs[s.Ref.R], &msgs[s.Ref.T]
	b.WriteString("== " + s.Key() + "\n")
	b.WriteString("   R: " + callOf(msgs, s.Ref.R) + "\n")
	for _, tok := range s.Ref.Tokens {
		b.WriteString("   token " + strconv.Quote(tok) + "\n")
		b.WriteString("     in R: " + lineWith(refs.Text(r), tok) + "\n")
		at := refs.Text(t)
		for _, c := range t.ToolCalls {
			at += "\n" + c.Name + " " + c.Arguments
		}
		b.WriteString("     at T: " + lineWith(at, tok) + "\n")
	}
	return b.String()
}

func callOf(msgs []history.Message, r int) string {
	for i := r - 1; i >= 0; i-- {
		if msgs[i].Role == history.RoleAssistant {
			for _, c := range msgs[i].ToolCalls {
				if c.ID == msgs[r].ToolCallID {
					return c.Name + " " + clip(c.Arguments, 160)
				}
			}
			return "?"
		}
	}
	return "?"
}

func lineWith(s, tok string) string {
	for _, l := range strings.Split(s, "\n") {
		if refs.Visible(l, tok) {
			return clip(strings.TrimSpace(l), 220)
		}
	}
	return "(not on one line)"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Judged reads a judgement file: one sample key, a tab, and "real" or
// "coincidence" per line; # starts a comment.
func Judged(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, '\t')
		if i < 0 {
			continue
		}
		out[line[:i]] = line[i+1:] == "real"
	}
	return out, sc.Err()
}
