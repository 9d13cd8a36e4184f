// Package policy holds the task preset of the default policy, which the
// fit package's Policy and the door of the wrappers that trim each call
// with the package functions (internal/adapt's DoorOptions) share, so that
// both trim with the same one.
package policy

import "github.com/histrim/history"

// Task returns the default policy's task preset: history.WithTask with no
// goal named, the 6 most recent tool results whole and digests of up to
// 1,600 tokens (see fit.Policy).
func Task() history.Option {
	return history.WithTask(-1, history.ElideOptions{KeepRecent: 6, Digest: 1600})
}
