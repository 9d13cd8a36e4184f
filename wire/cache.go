package wire

import (
	"encoding/json"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/anthropicmsg"
	"github.com/histrim/history/internal/bytecache"
)

// A client resends its whole transcript on every request, so a message is
// converted again and again: the conversion of each message is kept, by
// its exact bytes (internal/bytecache: the map's key is the message
// itself, so a hit is an equal message, never a hash collision), up to
// 64 MiB of messages, after which the cache starts afresh. The core never
// modifies the messages it is given, so one conversion serves every
// request.
type convCache[T any] struct{ c bytecache.Cache[T] }

// get returns the conversion of raw by conv, cached.
func (c *convCache[T]) get(raw json.RawMessage, conv func(*json.RawMessage) (T, error)) (T, error) {
	if m, ok := c.lookup(raw); ok {
		return m, nil
	}
	m, err := conv(&raw)
	if err != nil {
		return m, err
	}
	c.put(raw, m)
	return m, nil
}

// lookup returns the conversion kept for raw, if any.
func (c *convCache[T]) lookup(raw json.RawMessage) (T, bool) { return c.c.Get(raw) }

// put keeps m as the conversion of raw.
func (c *convCache[T]) put(raw json.RawMessage, m T) { c.add(raw, m, len(raw)) }

// add keeps m as the conversion of raw, counted as size bytes (raw's and
// what m holds of its own).
func (c *convCache[T]) add(raw json.RawMessage, m T, size int) { c.c.Add(raw, m, size) }

var chatCache convCache[history.Message]

// chatToMessageCached is chatToMessage through chatCache.
func chatToMessageCached(u *json.RawMessage) (history.Message, error) {
	return chatCache.get(*u, chatToMessage)
}

var anthropicCache convCache[anthropicmsg.Info]

// anthropicDescribe reads a content block as anthropicmsg reads a block
// through its JSON (DescribeJSON), cached by the block's bytes; its parts
// clipped, so that an append to them never writes to the cached array.
func anthropicDescribe(b *json.RawMessage) (anthropicmsg.Info, bool) {
	in, _ := anthropicCache.get(*b, func(raw *json.RawMessage) (anthropicmsg.Info, error) {
		in := anthropicmsg.DescribeJSON(*raw)
		in.Parts = slices.Clip(in.Parts)
		return in, nil
	})
	return in, true
}

// anthropicRead is what the shared Messages logic reads of a message (its
// role, and each block's Info), kept by the message's bytes in
// anthropicReads.
type anthropicRead struct {
	role  string
	infos []anthropicmsg.Info
}

var anthropicReads convCache[anthropicRead]

// anthropicMemo is anthropicSDK's Memo: read's result for m, cached by
// m's bytes; infos clipped, so that an append to them never writes to the
// cached array.
func anthropicMemo(m *json.RawMessage, read func(*json.RawMessage) (string, []anthropicmsg.Info, error)) (string, []anthropicmsg.Info, error) {
	if r, ok := anthropicReads.lookup(*m); ok { // no closure to allocate on a hit
		return r.role, r.infos, nil
	}
	role, infos, err := read(m)
	if err != nil {
		return role, infos, err
	}
	anthropicReads.put(*m, anthropicRead{role, slices.Clip(infos)})
	return role, slices.Clip(infos), nil
}
