// Package pins lets the SDK adapters read and replace the pins set with
// history.WithPin, whose indices refer to the caller's native slice, so
// that an adapter converting one native message to several history
// messages can translate them. The history package fills in Read when it
// is initialised; adapters import history, so it is always set for them.
package pins

// Read returns the indices set with history.WithPin in opts (a
// []history.Option), ascending and unique; nil when none.
var Read func(opts any) []int
