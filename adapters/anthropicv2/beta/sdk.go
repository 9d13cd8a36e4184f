// Code generated from the GA package's file of the same name by rename.sed (go generate); DO NOT EDIT.

package beta

import (
	"encoding/json"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/anthropicmsg"
)

// union is the SDK's content block type.
type union = anthropic.BetaContentBlockParamUnion

// sdk is what anthropic-sdk-go v2's beta Messages types supply to the Messages
// API logic the Anthropic adapters share (internal/anthropicmsg).
var sdk = &anthropicmsg.SDK[[]anthropic.BetaTextBlockParam, anthropic.BetaMessageParam, union]{
	Name:    "anthropicv2/beta",
	Message: message,
	Type: func(b *union) string {
		if t := b.GetType(); t != nil {
			return *t
		}
		return ""
	},
	Overridden: blockOverridden,
	Describe:   describe,
	Decode: func(raw json.RawMessage) (union, bool) {
		var t union
		return t, json.Unmarshal(raw, &t) == nil && t.GetType() != nil
	},
	WithContent: func(m anthropic.BetaMessageParam, content []union) anthropic.BetaMessageParam {
		switch {
		case m.OfUser != nil:
			u := *m.OfUser
			u.Content = content
			return anthropic.BetaMessageParam{OfUser: &u}
		case m.OfAssistant != nil:
			a := *m.OfAssistant
			a.Content = content
			return anthropic.BetaMessageParam{OfAssistant: &a}
		}
		return m
	},
	ElideResult: func(b *union, text string) (union, bool) {
		if b.OfToolResult == nil {
			return union{}, false
		}
		r := *b.OfToolResult
		r.Content = []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: text}}}
		return union{OfToolResult: &r}, true
	},
	WithInput: func(b *union, args string) (union, bool) {
		if b.OfToolUse == nil {
			return union{}, false
		}
		u := *b.OfToolUse
		u.Input = json.RawMessage(args)
		return union{OfToolUse: &u}, true
	},
	Override: func(raw json.RawMessage) anthropic.BetaMessageParam {
		return param.Override[anthropic.BetaMessageParam](raw)
	},
	OverrideBlock: func(raw json.RawMessage) union { return param.Override[union](raw) },
	Notice: func(role, text string) anthropic.BetaMessageParam {
		content := []union{anthropic.NewBetaTextBlock(text)}
		if role == anthropicmsg.RoleAssistant {
			return anthropic.BetaMessageParam{OfAssistant: &anthropic.BetaAssistantMessageParam{Content: content}}
		}
		return anthropic.BetaMessageParam{OfUser: &anthropic.BetaUserMessageParam{Content: content}}
	},
	System: func(system []anthropic.BetaTextBlockParam) ([]string, []bool) {
		texts, cached := make([]string, len(system)), make([]bool, len(system))
		for i := range system {
			texts[i], cached[i] = system[i].Text, !param.IsOmitted(system[i].CacheControl)
		}
		return texts, cached
	},
}

// message returns the role and blocks of a user or assistant message; a
// system message (whose blocks are text blocks of their own type) and a
// message built with param.Override are read through their JSON.
func message(m *anthropic.BetaMessageParam) (string, []union, bool) {
	switch {
	case overridden(m):
		return "", nil, false
	case m.OfUser != nil && !overridden(m.OfUser):
		return anthropicmsg.RoleUser, m.OfUser.Content, true
	case m.OfAssistant != nil && !overridden(m.OfAssistant):
		return anthropicmsg.RoleAssistant, m.OfAssistant.Content, true
	}
	return "", nil, false
}

// overridden reports whether p was built with param.Override or
// param.SetJSON, so that its typed fields are not what it sends.
func overridden(p interface{ Overrides() (any, bool) }) bool {
	_, ok := p.Overrides()
	return ok
}

// blockOverridden reports whether the parts of b the conversion reads were
// built with param.Override.
func blockOverridden(b *union) bool {
	switch {
	case overridden(b):
		return true
	case b.OfText != nil:
		return overridden(b.OfText)
	case b.OfImage != nil:
		return overridden(b.OfImage) || overridden(b.OfImage.Source)
	case b.OfToolUse != nil:
		return overridden(b.OfToolUse)
	case b.OfToolResult != nil:
		return overridden(b.OfToolResult)
	case b.OfThinking != nil:
		return overridden(b.OfThinking)
	case b.OfRedactedThinking != nil:
		return overridden(b.OfRedactedThinking)
	}
	return false
}

// describe reads the frequent typed blocks (text, base64 images, tool use
// and results holding text, thinking); the others are read through their
// JSON.
func describe(b *union) (anthropicmsg.Info, bool) {
	in := anthropicmsg.Info{}
	if cc := b.GetCacheControl(); cc != nil {
		in.Cache = cc.Type != "" || cc.TTL != "" // what omitzero sends: no reflection per block
	}
	switch {
	case b.OfText != nil:
		in.Type, in.Parts = anthropicmsg.TypeText, []history.Part{{Type: history.PartText, Text: b.OfText.Text}}
	case b.OfImage != nil && b.OfImage.Source.OfBase64 != nil:
		s := b.OfImage.Source.OfBase64
		in.Type, in.Parts = "image", []history.Part{anthropicmsg.ImagePart(string(s.MediaType), s.Data)}
	case b.OfToolUse != nil:
		u := b.OfToolUse
		in.Type, in.ID, in.Name, in.Input = anthropicmsg.TypeToolUse, u.ID, u.Name, anthropicmsg.InputJSON(u.Input)
	case b.OfToolResult != nil:
		r := b.OfToolResult
		in.Type, in.ResultFor = anthropicmsg.TypeToolResult, r.ToolUseID
		for k := range r.Content {
			c := &r.Content[k]
			if c.OfText == nil {
				return in, false
			}
			in.Parts = append(in.Parts, history.Part{Type: history.PartText, Text: c.OfText.Text})
		}
	case b.OfThinking != nil:
		in.Type, in.Parts = anthropicmsg.TypeThinking, anthropicmsg.ThinkingParts(nil, b.OfThinking.Thinking, b.OfThinking.Signature)
	case b.OfRedactedThinking != nil:
		in.Type, in.Parts = anthropicmsg.TypeRedactedThinking, []history.Part{{Type: history.PartReasoning, Text: b.OfRedactedThinking.Data}}
	default:
		return in, false
	}
	return in, true
}
