package recallkey

import "testing"

func TestEscapeScope(t *testing.T) {
	tests := []struct{ in, want, why string }{
		{"", "", "the empty scope stays empty"},
		{"conv-42", "conv-42", "nothing to escape: the scope as it is"},
		{"a/b", "a%2Fb", "a slash would make one scope's names start another's"},
		{"a%2Fb", "a%252Fb", "a percent is escaped first, so an escaped slash is not a slash"},
		{"/%/", "%2F%25%2F", "every one"},
	}
	for _, tt := range tests {
		if got := EscapeScope(tt.in); got != tt.want {
			t.Errorf("EscapeScope(%q) = %q, want %q: %s", tt.in, got, tt.want, tt.why)
		}
	}
}

func TestIsHandle(t *testing.T) {
	tests := []struct {
		in   string
		want bool
		why  string
	}{
		{"r0123456789abcdef01234567", true, "r and 24 lower-case hex digits"},
		{"r0123456789ABCDEF01234567", false, "upper-case hex"},
		{"r0123456789abcdef0123456", false, "23 digits"},
		{"x0123456789abcdef01234567", false, "not r"},
		{"scope/r0123456789abcdef01234567", false, "a scoped name is not a handle"},
		{"", false, "empty"},
	}
	for _, tt := range tests {
		if got := IsHandle(tt.in); got != tt.want {
			t.Errorf("IsHandle(%q) = %v: %s", tt.in, got, tt.why)
		}
	}
}
