// Package beta trims the beta Messages API types of anthropic-sdk-go v2
// (BetaMessageParam, sent with client.Beta.Messages.New and by message
// threads) with the functions of its parent package, anthropicv2, and
// adds what the server-side context management of the beta API needs
// (docs/server-side.md):
//
//   - [ServerOf] reads what the server rewrites from the request params
//     (context_management edits compact_20260112, clear_tool_uses_20250919,
//     clear_thinking_20251015, and a continued thread);
//   - [Guard] returns the options that make the library the hard guard
//     above the server's trigger, so that each rewrite of the prompt has
//     one owner (a *GuardError when the budget is not above the trigger);
//   - [InputTokens] and [Observe] give a history.Calibration the count of
//     the prompt before the server's edits (input plus cache reads and
//     writes plus cleared tokens) and skip a request in which a
//     compaction ran;
//   - [TrimRequest] refuses a request that continues a thread by hand
//     (a *ThreadError): the server holds its history; [TrimThread] trims
//     a thread's client copy instead, which is what the SDK sends to create
//     the thread and replays after a 404 thread_not_found.
//
// api.go, sdk.go and summarizer.go are generated from the parent
// package's files by renaming the SDK's types to their beta twins
// (gen.go; they carry Go's "Code generated ... DO NOT EDIT." line), so the
// logic exists once; TestGenerated checks that they stay in sync.
package beta
