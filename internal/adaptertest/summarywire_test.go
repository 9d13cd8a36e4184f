package adaptertest

import (
	"strings"
	"testing"
)

func TestExtends(t *testing.T) {
	last := `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"tools":[{"name":"t"}],"generationConfig":{"temperature":0.5}}`
	tests := []struct {
		name, sum string
		caps      []string
		err       string // "" when it extends last
		reason    string
	}{
		{name: "extends", caps: []string{"max_tokens", "generationConfig.maxOutputTokens"},
			sum:    `{"model":"m","max_tokens":200,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"sum"}],"tools":[{"name":"t"}],"generationConfig":{"maxOutputTokens":200,"temperature":0.5}}`,
			reason: "key order and the caps aside, the same fields and one message more"},
		{name: "no cap", caps: []string{"max_tokens"}, err: "cap max_tokens",
			sum:    `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"sum"}],"tools":[{"name":"t"}],"generationConfig":{"temperature":0.5}}`,
			reason: "a summary request caps its reply"},
		{name: "a message changed", err: "messages[1]",
			sum:    `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"B"},{"role":"user","content":"sum"}],"tools":[{"name":"t"}],"generationConfig":{"temperature":0.5}}`,
			reason: "the prefix must be byte-identical"},
		{name: "tools changed", err: "tools differs",
			sum:    `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"sum"}],"generationConfig":{"temperature":0.5}}`,
			reason: "every other field is the same"},
		{name: "two appended", err: "4 elements",
			sum:    `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"x"},{"role":"user","content":"sum"}],"tools":[{"name":"t"}],"generationConfig":{"temperature":0.5}}`,
			reason: "one instruction only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ins, err := extends([]byte(last), []byte(tt.sum), "messages", tt.caps)
			switch {
			case tt.err == "" && (err != nil || string(ins) != `{"role":"user","content":"sum"}`):
				t.Errorf("extends = %s, %v (%s)", ins, err, tt.reason)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("extends: %v, want an error about %q (%s)", err, tt.err, tt.reason)
			}
		})
	}
}
