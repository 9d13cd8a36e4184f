package summarize

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocumentedPrompt: docs/summaries.md quotes Prompt as it is.
func TestDocumentedPrompt(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "summaries.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```text\n"+Prompt+"\n```") {
		t.Error("docs/summaries.md does not quote Prompt as it is")
	}
}
