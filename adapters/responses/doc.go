// Package responses trims the input items of OpenAI Responses API requests
// ([github.com/openai/openai-go/v3/responses.ResponseInputItemUnionParam])
// with the trimmer of github.com/histrim/history, without separating what
// the API requires together and without losing anything the caller put in
// the items.
//
// # Usage
//
//	import hresponses "github.com/histrim/history/adapters/responses"
//
//	items, res, err := hresponses.Trim(items, 100_000)
//	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
//		return err
//	}
//	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
//	resp, err := client.Responses.New(ctx, params)
//	if history.IsContextOverflow(err) {
//		items, res, err = hresponses.RecoverOverflow(items, err, 1)
//		// retry with items, unless err wraps history.ErrCannotRecover
//	}
//
// [Trim] converts the items with [ToHistory] only to decide what to keep,
// then returns the caller's own items: encrypted reasoning, ids, statuses,
// phases, prompt-cache breakpoints, extra fields set with SetExtraFields
// and values built with param.Override come back exactly as they went in.
// [RecoverOverflow] does the same after the API rejected a request as too
// long ("context_length_exceeded"). [Validate] checks the rules a trim
// could break.
//
// # Reasoning stays bound
//
// A reasoning model returns a reasoning item before the output it reasoned
// for, and the API rejects an input that holds one without the other:
//
//	Item 'rs_...' of type 'reasoning' was provided without its required following item.
//	Item 'msg_...' of type 'message' was provided without its required preceding item of type 'reasoning'.
//
// (The full body of the second names the reasoning item too: "Item
// 'fc_...' of type 'function_call' was provided without its required
// 'reasoning' item: 'rs_...'.", and the same for a message.) Keeping only
// the messages of a response's output is the classic way to break it.
//
// So the conversion is not one for one. The model output of one exchange
// (reasoning items, messages, tool calls, hosted tool calls) becomes one
// assistant history.Message: reasoning as parts of type
// history.PartReasoning, text as text parts, calls as tool calls. The tool
// outputs that follow become one tool message each. The core drops or
// keeps an assistant message with its tool results as one step, so a
// reasoning item is never separated from the item it precedes, and items
// never change order (a compaction item moved into the prefix aside, see
// Compaction). Parallel calls are one assistant message with several tool
// calls; their outputs may come in any order, each after its call. When a
// group holds a reasoning item (one that stays: see Repairs), model output
// after its outputs (the rest of a response whose parallel calls were
// answered one by one, each output right after its call) stays in the
// group, up to the next reasoning item. Without reasoning, each run of
// model output opens a step of its own.
//
// Result.Messages and Result.Kept therefore describe the converted history
// (ToHistory), not the items; Trim maps the decision back group by group.
//
// # Mapping
//
//	item                                         history
//	message, role user (easy or input message)   RoleUser: opens a turn
//	message, role system or developer            RoleSystem (leading ones pinned)
//	additional_tools                             RoleSystem, its tools counted as JSON
//	message, role assistant; output message      text parts of the exchange's assistant message
//	                                             (its content when it is one string alone)
//	reasoning                                    reasoning parts: summary, content, encrypted content
//	                                             (an empty one when it has none of them)
//	function_call, custom_tool_call,             tool calls, by call_id
//	  computer_call, local_shell_call,
//	  shell_call, apply_patch_call, program,
//	  tool_search_call with a call_id
//	mcp_approval_request                         tool call, by its id
//	the matching outputs                         RoleTool, answering the call_id
//	  (local_shell_call_output: by its id;
//	  mcp_approval_response: approval_request_id)
//	web_search_call, file_search_call,           parts of the exchange's assistant message,
//	  code_interpreter_call, mcp_call,             counted as JSON (image_generation_call:
//	  mcp_list_tools, image_generation_call,       an image part)
//	  tool_search_call and _output without
//	  a call_id
//	compaction                                   KindSummary: pinned, never split
//	compaction_trigger                           KindNudge (must stay last, and does)
//	item_reference, unknown item types           parts of the exchange, counted as JSON
//
// Images (input_image, image outputs, screenshots) count by the dimensions
// read from base64 data URLs, files by their decoded size; remote ones are
// of unknown size.
//
// The assistant message of an exchange whose calls must be sent as they
// were holds a history.PartReasoning part: its reasoning, or, when that
// part would be missing, an empty one, which costs nothing with the
// library's counters. That is an exchange with a reasoning item that
// stays (a bare one, whose text the API keeps, included), with an
// item_reference or an item of an unknown type (it may be reasoning), or
// with a call whose arguments Trim cannot rewrite (see Clearing
// arguments).
//
// # Counting reasoning
//
// The reasoning items of the current turn (after the latest user message)
// are counted: their summary and content texts, and their encrypted
// content as text (it is opaque, and its length is the only measure there
// is). Those of earlier turns cost nothing: the API strips them by
// default, "In turn 2, reasoning items from turn 1 are ignored and
// stripped, since the model doesn't reuse reasoning items from previous
// turns ... the API will automatically remove any reasoning items that
// aren't relevant for the current turn"
// (https://cookbook.openai.com/examples/responses_api/reasoning_items).
// They are still sent with the items they bind. Newer models take a
// reasoning.context parameter that "controls which reasoning items are
// rendered back to the model on later turns" (current_turn, all_turns or
// auto; shared.ReasoningParam.Context in openai-go): [TrimRequest] reads
// it from the request and, for "all_turns", counts the reasoning of every
// turn; [Trim], [RecoverOverflow] and the [Trimmer], which see only the
// items, count as the default does (under all_turns they count less than
// the API reads: trim with TrimRequest there).
//
// Counting what the API reads matters most with a history.Calibration:
// the share of the request that earlier turns' reasoning makes varies from
// one request to the next, so counting it when the API does not (or the
// other way round) is not a steady ratio the Calibration can learn. In the
// loop of the adapters' matrix (tool results counted 1.6 times, other
// text 0.9 times, 8,000 tokens), counting it all against an API that
// strips it gave trimmed requests filling 79.9% of the window and 2
// overflows; counting what the API reads, 91.8% and none
// (TestReasoningContextLoop; with all_turns through TrimRequest, 88.1% and
// none).
//
// # Repairs
//
// Trim sends nothing the API rejects for pairing, even when the input was
// broken (an interrupted request, a lost output):
//
//   - the core's orphan sweep (see history.SweepOrphans) drops a call that
//     no output answers and an output that answers no call of the exchange
//     it follows (a call after it in the exchange, or one already
//     answered, included), and a second call with a call id an earlier
//     call of its exchange has; a reasoning item that preceded only a
//     dropped call is dropped with it;
//   - a reasoning item not followed by an item it can precede (the end of
//     the input, a user message, a tool output) is dropped. The conversion
//     turns it into a tool message that answers no call (Kind
//     history.KindElided, tool-call id "histrim:unbound-reasoning:<id>"),
//     so the sweep removes it: Result.OrphansRemoved counts it and
//     Result.Dropped lists it. Outputs and calls that pair with nothing get
//     tool-call ids starting "histrim:unpaired:" and "histrim:duplicate:"
//     the same way.
//
// A repaired output converts to no more than the core counted, but may
// group differently (the repair can join the exchanges around what it
// removed), so trimming it again may repair it further. An input that
// needed no repair is trimmed once and for all: trimming the output again
// with the same budget and options leaves it as it is.
//
// Pairing is positional, as in the core: an output answers a call of the
// model output before it, walking back over other outputs only. The API
// itself pairs by call_id anywhere in the input, so an output separated
// from its call by a user message is dropped although the API would have
// taken it. [Validate] checks the API's own rule.
//
// # Elision and step trimming
//
// Every option of the core works through Trim, including the degradation
// ladder: history.WithElision and history.WithStepTrim. An output the core
// elided comes back as a copy of the caller's item holding the placeholder,
// for example
//
//	{"type":"function_call_output","call_id":"call_1","output":"[elided tool result: read_file, 1834 tokens; re-run the tool if needed]"}
//
// as the output of function, custom tool, local shell and apply_patch
// outputs, the result of a program output, and one stdout chunk (with the
// last chunk's outcome) of a shell output; call ids, statuses and extra
// fields are kept, and an override is rewritten at the JSON level, keeping
// its unknown keys. computer_call_output (a screenshot),
// tool_search_output (loaded tools) and mcp_approval_response have no text
// form: the conversion marks them history.KindElided, which the core never
// elides, so they are kept or dropped whole.
//
// Under history.WithStepTrim a step is an exchange with its outputs. An
// exchange with a reasoning item holds reasoning, so when the latest turn's
// first exchange has one, the core keeps that step and drops the steps
// after it. The Responses API does not require it (any exchange may go
// whole); the core keeps it for the providers that do. The same holds for
// the other exchanges marked as holding reasoning (see Mapping): one with
// a reference, an unknown item or a call Trim cannot rewrite.
//
// # Clearing arguments
//
// With history.ElideOptions.ClearArguments, eliding an output also clears
// the arguments of the call it answers. Trim sends the call item as a copy
// of the caller's holding the core's arguments, so that the output counts
// what the core counted:
//
//	{"type":"function_call","call_id":"call_1","name":"write_file","arguments":"{\"elided\":\"[arguments elided: 607 tokens]\"}"}
//
// as the arguments of a function_call and the input of a custom_tool_call
// (free strings the model wrote, plain strings in the API's schema); ids,
// name, namespace, status and extra fields are kept, and an override is
// rewritten at the JSON level, keeping its unknown keys. The core clears
// no call of an exchange marked as holding reasoning (see Mapping), so
// these are sent exactly as they were, whatever their outputs become:
//
//   - calls after a reasoning item of their response (the API binds the
//     reasoning to them), after an item_reference or an unknown item;
//   - shell_call, local_shell_call, apply_patch_call, computer_call and
//     tool_search_call, whose arguments (as counted) are the JSON of a
//     structured action, operation or query of the API's schema, which the
//     placeholder object is not, and which no rewrite of one of its fields
//     would count as the core counted; mcp_approval_request, which the
//     server issued; program, whose code is bound to the fingerprint it is
//     replayed with;
//   - function and custom tool calls a program made (a caller other than
//     "direct"), which its replay may read back;
//   - with one of these, every other call of the same exchange.
//
// # Breadcrumbs
//
// The notices the core inserts (history.Breadcrumb for dropped turns,
// history.StepBreadcrumbText for dropped steps, or those set with
// history.WithBreadcrumb and history.WithStepBreadcrumb) become easy input
// messages of their role (developer for history.RoleSystem) holding their
// text as one string. Input messages have no author name: a notice's Name
// is not rendered.
//
// On the next trim, Trim recognises the notices it would insert
// (history.Breadcrumbs of its options) and the default ones, by exact text,
// as the other adapters do: the turn notice in the leading block only, the
// step notice anywhere, so the core replaces them and they never stack. A
// message someone wrote with exactly a notice's text is the only false
// positive. ToHistory recognises the default notices (user role). A
// notice in the assistant role is recognised only with the options that
// configure it: without them (ToHistory) it reads as part of the model
// output after it.
//
// # Compaction
//
// A compaction item (returned by the compact endpoint after the user
// messages it keeps, or by server-side compaction) stands for everything
// before it. It converts to a history.KindSummary message of its own, which
// the core never drops: right after the leading system messages it is
// pinned, and when the turns holding it are dropped, the newest one is moved
// into the prefix, where it keeps standing in for them. It is never split
// and never elided. A reasoning item right before a compaction item is
// not bound to it (it is dropped as unbound). Moved, it can leave two
// exchanges next to each other that it separated: they then read as one
// (as after a repair), which counts no more than the core counted.
//
// With server-side compaction (context_management in a stateless
// request), the server reads nothing before the latest compaction item:
// [Compacted] returns what such a request sends (the leading system and
// developer messages, then everything from that item on; a compaction
// item with empty encrypted_content is left out), and [Guard] makes the
// library the hard guard above the compact_threshold. A request chained
// onto server-held state (previous_response_id, a conversation) cannot be
// pruned from the client: [TrimRequest] refuses it with a *ChainedError.
// [Origins], [Record] and [Retarget] keep reasoning and compaction items
// another backend encrypted out of a request. See docs/server-side.md.
//
// # Item references
//
// An item_reference names a stored item the adapter cannot see: its type
// and size are unknown. It is handled conservatively: counted by its JSON
// (the referenced item's size is not counted, so a history of references
// may be larger than the count; RecoverOverflow covers the API's
// rejection); treated as model output of its exchange, so a reasoning item
// before it stays with it; and it binds its group like a reasoning item (it
// may be one). An output whose call is not in the input but follows a
// reference in the same exchange is taken to answer a referenced call: it
// is kept, and dropped, with that reference. An item of a type this SDK
// version does not model (built with param.Override) is handled the same
// way.
//
// # Overflows, overhead and calibration
//
// RecoverOverflow trims the items that were sent after a
// context_length_exceeded error (retry at most twice). Overhead counts what
// a request sends besides its items (tools, instructions, the text format);
// pass it with history.WithOverhead so that Result.TokensAfter is the whole
// request, and pass that with the response's usage.input_tokens to
// history.Calibration.Observe.
//
// # Pins
//
// history.WithPin takes indices into the caller's items. Trim and
// RecoverOverflow translate them: a pinned item pins the history message
// its exchange became (a message the model wrote, with its reasoning), so
// the whole exchange is kept. An item that belongs to a tool call or its
// output cannot be pinned (it would be separated from its pair), nor an
// index beyond the items: both give a *history.OptionError naming the item.
//
// # The stateful trimmer and positions
//
// NewTrimmer returns a Trimmer: a history.Trimmer over the whole
// transcript (maintenance points, cold resume, summaries; the prompt only
// grows at its end between them, so the provider's prompt cache
// survives), its decisions mapped back onto the caller's own values as
// Trim maps them; its RecoverOverflow trims what it sent further, after
// which its plans fit what the provider said. Positions says where input
// messages landed in an output, to pin them again (history.WithPin) when
// the output is trimmed later. Every adapter keeps the same contract
// (docs/adapters.md, "The contract").
//
// A Trimmer's state saves and restores (MarshalBinary, UnmarshalBinary:
// a restored Trimmer sends byte for byte what the original would), and
// NewConversations keeps one per conversation, its state in a
// history.StateStore shared by a runtime's replicas (history.Conversations
// over this package's messages; docs/replicas.md).
//
// # Module
//
// This adapter is its own Go module, so the core library keeps its small
// dependency set. Add it with
//
//	go get github.com/histrim/history/adapters/responses
//
// Its go.mod requires the core release it is tagged with, with no replace,
// so the go command resolves both from the module proxy; inside the histrim
// repository, go.work builds it against the core beside it
// (docs/adapters.md, "Versioning").
//
// The module declares go 1.24 and requires openai-go v3.44.0, like the
// OpenAI chat adapter: the newest v3 release that does not itself require
// Go 1.25 or later. It has every input item type the adapter reads
// (compaction, shell, apply_patch, program and tool search items
// included). A program that requires a newer openai-go gets that one
// (minimum version selection); items of types added since are read through
// their JSON as unknown items.
package responses
