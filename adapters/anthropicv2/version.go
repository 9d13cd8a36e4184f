package anthropicv2

import "github.com/histrim/history/internal/version"

// This adapter imports the core's internal packages, which make no
// compatibility promise between core releases, so it is released together
// with the core, at the same tag, and its go.mod requires that core. A
// build against a core whose internal API differs stops here with
// "undefined: version.V3". Upgrade both to one tag:
//
//	go get github.com/histrim/history@vX.Y.Z github.com/histrim/history/adapters/anthropicv2@vX.Y.Z
//
// (docs/adapters.md, "Versioning").
var _ version.V3
