// Package optset lets the SDK adapters apply a call's options once. An
// adapter reads the options of one call several times (the notices they
// configure, their pins, the trim itself); options are closures, and
// running them again for every read would apply the user's settings, and
// validate them, as many times. Resolve turns them into one Option that
// holds the settings they resolve to, which each read then copies.
//
// The history package sets Resolve when it is initialised (as it sets
// pins.Read); adapters import history, so it is set for them. Until a core
// that sets it, Resolve is nil and the adapters pass the options on as
// they are (see Once).
package optset

// Resolve returns one history.Option (as any) that sets what opts, a
// []history.Option, sets: the options applied once, over the defaults,
// their first error included. Applying the result copies those settings
// and runs none of the options again. Nil when the core does not provide
// it.
var Resolve func(opts any) any
