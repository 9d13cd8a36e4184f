package goopenai

import "github.com/histrim/history/internal/version"

// This adapter is released together with the core, at the same tag, like
// every adapter (it will share the adapters' internal packages), and its
// go.mod requires that core. A build against a core whose internal API
// differs stops here with "undefined: version.V3". Upgrade both to one
// tag:
//
//	go get github.com/histrim/history@vX.Y.Z github.com/histrim/history/adapters/goopenai@vX.Y.Z
//
// (docs/adapters.md, "Versioning").
var _ version.V3
