package anthropic

import (
	"slices"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/pins"
	"github.com/histrim/history/internal/regroup"
)

// translatePins returns opts with the pins set by history.WithPin, which
// index msgs (n messages), translated to the indices of hist, the history
// msgs converted to (srcs saying where each of its messages came from):
// each pinned native message pins every history message it became, and the
// system prompt, which comes first in hist, shifts them all. opts is
// returned as it is when it pins nothing.
//
// A pin that names no message of msgs, a message holding tool_use or
// tool_result blocks (it cannot be kept apart from its pair), or a notice
// an earlier trim inserted (a trim replaces it) is rejected with the
// *history.OptionError the core returns for such a pin, naming the index
// in msgs.
func translatePins(hist []history.Message, srcs []regroup.Slot, n int, opts []history.Option) ([]history.Option, error) {
	native := pins.Read(opts)
	if len(native) == 0 {
		return opts, nil
	}
	if last := native[len(native)-1]; last >= n {
		return nil, pinError(last, "is outside the request's "+strconv.Itoa(n)+" messages")
	}
	out := make([]int, 0, len(native))
	for j := range srcs {
		i := srcs[j].Native
		if _, ok := slices.BinarySearch(native, i); !ok || i < 0 {
			continue
		}
		m := &hist[j]
		switch {
		case m.Role == history.RoleTool:
			return nil, pinError(i, "holds tool_result blocks; it cannot be kept without the tool_use blocks they answer")
		case len(m.ToolCalls) > 0:
			return nil, pinError(i, "holds tool_use blocks; it cannot be kept without their tool_result blocks")
		case m.Kind == history.KindBreadcrumb:
			return nil, pinError(i, "is a notice an earlier trim inserted, which a trim replaces")
		}
		out = append(out, j)
	}
	return append(opts[:len(opts):len(opts)], history.WithPin(out...)), nil
}

// pinError is the *history.OptionError for a pin on msgs[i].
func pinError(i int, reason string) error {
	return &history.OptionError{Option: "WithPin", Reason: "message " + strconv.Itoa(i) + " of msgs " + reason}
}
