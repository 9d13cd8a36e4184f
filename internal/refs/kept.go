package refs

import history "github.com/histrim/history"

// At returns the references of the request for the assistant message at t
// (those with T == t) and the references after them, from refs ordered by
// T and holding none before t.
func At(refs []Ref, t int) (mine, rest []Ref) {
	n := 0
	for n < len(refs) && refs[n].T == t {
		n++
	}
	return refs[:n], refs[n:]
}

// Kept returns how many of refs, references of one request, the prompt res
// keeps (it shows every token of the reference inside R), and how many of
// their tokens it shows. msgs is the transcript res was trimmed from:
// res.Kept indexes it.
func Kept(msgs []history.Message, res *history.Result, refs []Ref) (kept, tokens int) {
	if len(refs) == 0 {
		return 0, 0
	}
	at := make(map[int]int, len(refs))
	for _, r := range refs {
		at[r.R] = -1
	}
	for j, k := range res.Kept {
		if _, ok := at[k]; ok && k >= 0 {
			at[k] = j
		}
	}
	for _, r := range refs {
		n := 0
		if j := at[r.R]; j >= 0 {
			n = Shown(&res.Messages[j], &msgs[r.R], r.Tokens)
		}
		tokens += n
		if n == len(r.Tokens) {
			kept++
		}
	}
	return kept, tokens
}

// Shown returns how many of toks the message sent for orig shows: all of
// them when it is sent as it is, those visible in its text otherwise.
func Shown(sent, orig *history.Message, toks []string) int {
	if sent.Content == orig.Content && len(sent.Parts) == len(orig.Parts) {
		return len(toks) // sent as it is
	}
	s := Text(sent)
	n := 0
	for _, t := range toks {
		if Visible(s, t) {
			n++
		}
	}
	return n
}
