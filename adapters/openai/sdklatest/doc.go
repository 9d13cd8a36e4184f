// Package sdklatest holds only tests: the OpenAI adapter and the core's
// overflow classifier against the latest openai-go/v3 release on the Go
// module proxy, where the adapter's own module tests its minimum (v3.44.0).
// It is its own module so that it can require a newer openai-go than the
// adapter does. openai-go v3.96.0 declares go 1.26.0, so this module does
// too: it needs a Go 1.26 toolchain.
package sdklatest
