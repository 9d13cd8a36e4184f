// Package release tests the repository as its users get it: its test
// builds a consumer module from a module proxy made of this repository's
// modules at the release version (internal/version.Core), with plain
// require lines and no replace, as `go get` of the core and an adapter
// leaves it. It is a module of its own so that the core keeps no test
// dependency on golang.org/x/mod; it is never published. The release
// steps are in docs/adapters.md, "Releasing".
package release
