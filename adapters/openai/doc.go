// Package openai trims OpenAI chat-completion histories
// ([github.com/openai/openai-go/v3.ChatCompletionMessageParamUnion])
// with the whole-turn trimmer of github.com/histrim/history, without losing
// anything the caller put in them.
//
// # Usage
//
//	import hopenai "github.com/histrim/history/adapters/openai"
//
//	msgs, res, err := hopenai.Trim(params.Messages, 100_000)
//	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
//		return err
//	}
//	params.Messages = msgs
//
// [Trim] converts the messages with [ToHistory] only to decide what to keep,
// then returns the caller's own values (via [history.Apply]): names, tool-call
// ids, image parts, prompt-cache breakpoints, extra fields set with
// SetExtraFields and values built with param.Override all come back exactly
// as they went in. The one exception is an assistant message whose
// unanswered tool calls the orphan sweep stripped: it comes back as a copy of
// the original without those calls, everything else unchanged.
//
// # Mapping
//
// One native message becomes one [history.Message], so Result.Kept holds
// indices into the caller's slice:
//
//   - system and developer messages become RoleSystem (leading ones are
//     pinned: never dropped);
//   - user messages become RoleUser, with text, image, audio and file parts;
//     image sizes are read from the header of base64 data URLs (PNG, JPEG,
//     GIF) so images are counted by their dimensions;
//   - assistant messages become RoleAssistant with their tool calls
//     (function and custom), refusals and text;
//   - tool messages become RoleTool with their tool_call_id;
//   - the deprecated function_call / function-role pair is mapped to a tool
//     call and a tool result with the fixed ID "legacy_function_call", so it
//     is paired and dropped together like any other.
//
// # Breadcrumbs
//
// When turns are dropped, the breadcrumb ([history.Breadcrumb], or the one
// set with [history.WithBreadcrumb]) is inserted as a native message of its
// role holding its Content as a plain string. On the next trim, a user
// message whose content is exactly [history.BreadcrumbText], standing right
// after the leading system messages, is recognised as that breadcrumb and
// replaced rather than counted as a turn. A custom breadcrumb text is not
// recognised: it then counts as the oldest turn and is dropped first, so
// breadcrumbs still never stack.
//
// # Pairing
//
// [Validate] checks the pairing rule the Chat Completions API enforces with
// an HTTP 400. Every slice [Trim] returns passes it whenever its input
// converted without error.
//
// # Module
//
// This adapter is its own Go module, so the core library keeps its small
// dependency set. Add it with
//
//	go get github.com/histrim/history/adapters/openai
//
// which resolves a published version of github.com/histrim/history. The
// replace directive in this module's go.mod only applies inside the
// histrim repository, where the adapter is built against the core in the
// same checkout; Go ignores replace directives of dependencies.
package openai
