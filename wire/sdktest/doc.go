// Package sdktest drives the Transport of package wire with the real Go
// SDK clients (openai-go, go-openai) against local stand-ins of the
// providers' APIs that count, refuse requests over the window with the
// provider's real HTTP 400 body, and check the tool pairing and the
// latest user message. It holds tests only.
package sdktest
