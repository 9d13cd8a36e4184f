// Package version states which core the adapter modules are built with.
//
// Each adapter (adapters/<name>, a module of its own) imports the core's
// internal packages: adapt, anthropicmsg, errtree, media, mediapart, notice,
// optset, origins, pairing, pins, regroup, rules and summarize. Go
// allows it, since their import paths share the core's prefix, but
// internal packages make no compatibility promise, so an adapter built
// with another core release than its own may fail to compile or, worse,
// behave differently. Adapters are therefore released together with the
// core, at the same tag, and each requires exactly that core version
// (docs/adapters.md, "Versioning").
//
// Two checks hold that rule. At build time, every adapter names the type
// V<API> of the internal API it was written for (var _ version.V3), so a
// core whose internal API changed stops the build at that line with
// "undefined: version.V3". In tests, every adapter checks that its go.mod
// requires Core, the core release its tests run against.
package version

// Core is the core release this tree belongs to: the version of
// github.com/histrim/history that every adapter's go.mod requires, set to
// the release tag when core and adapters are tagged. Until the first
// release it is the placeholder version the adapters require (and replace
// with the core beside them).
const Core = "v0.1.0"

// API numbers the internal API the adapters use. It is raised, and V<API>
// renamed with it, whenever that API changes in a way an adapter built for
// the previous one would notice (a signature, a meaning); the test of this
// package records a digest of the exported declarations to make such a
// change visible.
const API = 3

// V3 exists while API is 3. An adapter declares the internal API it was
// written for by naming it. (API 1 became 2 when regroup began to carry
// the arguments the core cleared: an adapter built for API 1 would send
// them whole while the Result counts them cleared. API 2 became 3 when the
// shape every adapter shares moved into internal/adapt, whose Results
// describe the native messages without a separate system prompt.)
type V3 struct{}
