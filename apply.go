// This file owns Apply: a trim decision mapped onto the caller's own types.

package history

// Apply maps a [Result] back onto the caller's own messages: native[i] for
// every index i in [Result.Kept], and breadcrumb() where r.Kept holds -1.
// The output has the length of r.Messages (less the inserted messages when
// breadcrumb is nil). A runtime converts its messages to []Message only to
// decide, then applies the decision to its originals, so provider-specific
// content (signed reasoning, cache-control markers, unknown fields) survives
// untouched.
//
// native must be the slice, or a slice parallel to it, that r was computed
// from. Kept always parallels Messages, including in a Result where nothing
// changed (then Apply returns a new slice with native's elements). When
// r.Kept is nil (the zero Result, or one returned with an invalid-input
// error), Apply returns native itself, clipped to its length. A nil
// breadcrumb leaves inserted messages out. Apply never modifies native; the result never shares spare capacity
// with it. It panics, like an index expression, if r.Kept names an index
// outside native.
//
// Note that [Result.Messages] may hold a modified copy of a kept message (an
// assistant message whose unanswered tool calls the orphan sweep stripped,
// or a tool result replaced under [WithElision]); Apply returns the caller's
// original for it. Adapters that need the modified form convert
// Result.Messages instead.
func Apply[M any](native []M, r Result, breadcrumb func() M) []M {
	if r.Kept == nil {
		return native[:len(native):len(native)]
	}
	out := make([]M, 0, len(r.Kept))
	for _, i := range r.Kept {
		if i < 0 {
			if breadcrumb != nil {
				out = append(out, breadcrumb())
			}
			continue
		}
		out = append(out, native[i])
	}
	return out
}
