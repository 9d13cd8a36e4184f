package trpc

import (
	"testing"

	"github.com/histrim/history/internal/adaptertest"
)

// TestCoreRequirement: go.mod requires the core release these tests run
// against, so that this module and the core are released and upgraded
// together.
func TestCoreRequirement(t *testing.T) { adaptertest.CoreRequirement(t) }
