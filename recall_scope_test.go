package history

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScopeStoreNested: scopes are never prefixes of each other, whatever
// their keys hold ('/', the escape character), so the recall tool of one
// conversation cannot read another's result even given its handle; a
// handle that is not one ElisionHandle makes is never looked up.
func TestScopeStoreNested(t *testing.T) {
	shared := NewMemoryStore()
	m := Message{Role: RoleTool, ToolCallID: "c1", Name: "sh", Content: "secret of user2"}
	h := ElisionHandle(m)
	require.NoError(t, ScopeStore(shared, "tenant1/user2").Put(h, m))
	for _, tc := range []struct {
		scope, id, reason string
	}{
		{"tenant1", "user2/" + h, "a parent scope with the rest of the child's key in the id"},
		{"tenant1", h, "a parent scope with the handle"},
		{"tenant1%2Fuser2", h, "the escaped form of the child's key as a key"},
		{"tenant1/user2/", h, "a key that only adds a '/'"},
		{"tenant1/user2", "../" + h, "a path in the id"},
		{"tenant1/user2", h + "x", "a handle with a suffix"},
		{"tenant1/user2", "R" + h[1:], "a handle in upper case"},
		{"", "tenant1/user2/" + h, "the unscoped store given the scoped key"},
	} {
		_, err := RecallContext(context.Background(), ScopeStore(shared, tc.scope), `{"id":"`+tc.id+`"}`)
		assert.ErrorIs(t, err, ErrUnknownHandle, tc.reason)
	}
	_, err := RecallContext(context.Background(), shared, `{"id":"tenant1%2Fuser2/`+h+`"}`)
	assert.ErrorIs(t, err, ErrUnknownHandle, "the model names a handle, never a stored key")
	got, err := RecallContext(context.Background(), ScopeStore(shared, "tenant1/user2"), `{"id":"`+h+`"}`)
	require.NoError(t, err)
	assert.Equal(t, m.Content, got, "the conversation itself reads it")

	// Nested ScopeStores are a scope within a scope, apart from the
	// scope whose key joins theirs with a '/'.
	nested := ScopeStore(ScopeStore(shared, "tenant1"), "user2")
	_, ok, err := nested.Get(context.Background(), h)
	require.NoError(t, err)
	assert.False(t, ok, "ScopeStore(ScopeStore(s, a), b) is not ScopeStore(s, a+\"/\"+b)")
	require.NoError(t, nested.Put(h, m))
	got2, ok, err := nested.Get(context.Background(), h)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, m.Content, got2.Content)
	_, ok, _ = ScopeStore(shared, "tenant1").Get(context.Background(), "user2/"+h)
	assert.False(t, ok, "the parent scope does not read the nested one's by a path")
	assert.Error(t, ScopeStore(shared, "x").Put("not-a-handle", m), "a Put under a name no elision makes")
}
