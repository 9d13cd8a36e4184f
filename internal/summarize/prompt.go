package summarize

import (
	"math"
	"strconv"
	"strings"

	"github.com/histrim/history"
)

// Prompt is what every ready-made Summarizer asks the model to keep: the
// one copy of the guidance, quoted in docs/summaries.md (a test holds the
// two together). Config.Prompt replaces it. The request adds, before it,
// which part of the conversation to summarise, and after it, the length
// the summary must keep to.
const Prompt = `Write it for the assistant, which will carry on with the work from your summary and the rest of the conversation alone. Keep, under these headings:
Task: what the user asked for, and why. Quote the request that opened the task word for word when it is in the part you summarise; when it stays in the conversation, refer to it without repeating it.
Constraints: every instruction, preference and limit the user stated, in their own words where they are short.
Decisions: what was decided or agreed, and why; approaches tried and given up.
Files and resources: every file, path, URL, command and identifier that was read, created or changed, and what was done to each.
Progress: what is done, what failed and how it was fixed, and the state the work is in.
Open questions: what is unresolved, what was asked and not yet answered, and the next step.
Leave out greetings, tool output that is no longer needed and anything the rest of the conversation repeats. Write plain text under those headings, with no preamble.`

// The framing of the two forms of a summary request, around Prompt.
const (
	// pause opens the instruction of the cache-safe form, which ends the
	// conversation's last request.
	pause = "Pause the task: do not call any tool, and do not answer the last message. "
	// leaving follows the scope: what is asked.
	leaving = " is about to be removed from your context: write the summary that will stand in its place."
	// foldIn is said when the part opens with an earlier summary.
	foldIn = " It opens with an earlier summary: fold it in, so that yours covers everything that one did."
	// staying introduces the messages of the part that stay in the
	// conversation (pinned: the task's opening request, for one).
	staying = " These messages in that part stay in the conversation word for word, so refer to them without repeating them: "
	// plainIntro opens the system prompt of the plain form.
	plainIntro = "You write the summary that stands for the earliest part of a conversation between a user and an AI assistant that uses tools: that part is about to be removed from the assistant's context. The next message holds it as a transcript"
	// plainFold is said in the plain form when the transcript opens with
	// an earlier summary.
	plainFold = ", opening with an earlier summary: fold it in, so that yours covers everything that one did"
	// plainEnd closes the plain form's introduction.
	plainEnd = ". Do not continue the conversation, and do not answer anything in it."
)

// quoteRunes is how much of a message the instruction quotes to name it;
// longQuote how much when the short quote also begins an earlier message.
const (
	quoteRunes = 80
	longQuote  = 240
)

// length is the sentence that bounds the summary, for a reply of at most
// tokens tokens: half as many words, since English runs at about 1.3
// tokens a word and the model's count of words is loose.
func length(tokens int) string {
	words := max(tokens/2, 16)
	return " Keep it under about " + strconv.Itoa(words) + " words."
}

// instruction returns the user message the cache-safe form appends to the
// last request, whose conversation (converted) is prefix and whose part to
// summarise is sc; folded says it opens with an earlier summary. false
// when the message that ends the part cannot be named unambiguously.
func instruction(prefix []history.Message, sc scope, folded bool, guidance string, tokens int) (string, bool) {
	var b strings.Builder
	b.WriteString(pause)
	if sc.end >= len(prefix) {
		b.WriteString("This whole conversation")
	} else {
		q, ok := uniqueQuote(prefix, sc.end)
		if !ok {
			return "", false
		}
		b.WriteString("Everything in this conversation before the " + noun(prefix[sc.end].Role) + " that begins " + q)
	}
	b.WriteString(leaving)
	if folded {
		b.WriteString(foldIn)
	}
	for i, k := range sc.kept {
		switch i {
		case 0:
			b.WriteString(staying)
		default:
			b.WriteString("; ")
		}
		b.WriteString("the " + noun(prefix[k].Role) + " that begins " + quote(Text(&prefix[k]), quoteRunes))
		if i == len(sc.kept)-1 {
			b.WriteString(".")
		}
	}
	b.WriteString("\n\n" + guidance + length(tokens))
	return b.String(), true
}

// system returns the system prompt of the plain form.
func system(folded bool, guidance string, tokens int) string {
	intro := plainIntro
	if folded {
		intro += plainFold
	}
	return intro + plainEnd + "\n\n" + guidance + length(tokens)
}

// transcript returns the user message of the plain form: previous (when
// not nil) and dropped, rendered as text.
func transcript(dropped []history.Message, previous *history.Message) string {
	msgs := make([]history.Message, 0, len(dropped)+1)
	if previous != nil {
		p := *previous
		p.Kind = history.KindSummary
		msgs = append(msgs, p)
	}
	msgs = append(msgs, dropped...)
	return history.RenderTranscript(msgs, math.MaxInt, history.RenderOptions{Separator: "\n\n"})
}

// noun names a message of role r in the instruction.
func noun(r history.Role) string {
	switch r {
	case history.RoleAssistant:
		return "assistant message"
	case history.RoleTool:
		return "tool result"
	case history.RoleSystem:
		return "system message"
	}
	return "user message"
}

// uniqueQuote quotes prefix[end] so that no message before it begins with
// the quote (what the instruction says of it); false when none does.
func uniqueQuote(prefix []history.Message, end int) (string, bool) {
	t := flat(Text(&prefix[end]))
	if t == "" {
		return "", false
	}
	for _, n := range []int{quoteRunes, longQuote} {
		head := cut(t, n)
		clash := false
		for i := range end {
			if strings.HasPrefix(flat(Text(&prefix[i])), head) {
				clash = true
				break
			}
		}
		if !clash {
			return quote(t, n), true
		}
	}
	return "", false
}

// quote returns the head of s, at most n runes on one line, in quotation
// marks, with an ellipsis when s goes on.
func quote(s string, n int) string {
	s = flat(s)
	head := cut(s, n)
	if len(head) < len(s) {
		return "\u201c" + head + "\u2026\u201d"
	}
	return "\u201c" + head + "\u201d"
}

// cut returns the first n runes of s.
func cut(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// flat returns s on one line: every run of white space a single space,
// none at either end.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// Text returns a message's text: its content, then its non-empty text
// parts, one per line (what the recall tool returns for an elided
// result, too).
func Text(m *history.Message) string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, p := range m.Parts {
		if p.Type == history.PartText && p.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
