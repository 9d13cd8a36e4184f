package trpc

import "github.com/histrim/history/internal/version"

// This module shares the adapters' shape (internal/adapt), so it is
// released together with the core, at the same tag, like every adapter,
// and its go.mod requires that core. A build against a core whose
// internal API differs stops here with "undefined: version.V3". Upgrade
// both to one tag (docs/adapters.md, "Versioning").
var _ version.V3
