// Package release tests the repository as its users get it. Its tests
// install every published module (the core, and every module directly
// under adapters/, frameworks/ and stores/) in a module of its own outside
// the repository, with the commands the module's README gives
// (docs/install.md): from a checkout before a release, and from a module
// proxy made of this repository's modules at the release version
// (internal/version.Core) after it, with plain require lines and no
// replace; they build the README's program. They also check the release
// steps in docs/adapters.md ("Releasing") against the repository's go.mod
// files, and that the example programs import no internal package. It is
// a module of its own so that the core keeps no test dependency on
// golang.org/x/mod; it is never published.
package release
