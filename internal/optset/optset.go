// Package optset lets the SDK adapters apply a call's options once. An
// adapter reads the options several times in one call (the notices to
// recognise, the pins to translate, the trim itself); Resolve applies them
// once and returns a single option that installs the settings they
// resolved to, which costs a copy wherever it is applied again. The
// history package fills in Resolve when it is initialised; adapters import
// history, so it is always set for them.
package optset

// Resolve applies opts (a []history.Option) and returns one
// history.Option (as an any) that sets exactly what they set, an invalid
// option's error included. Options applied after it override it as they
// would override opts.
var Resolve func(opts any) any
