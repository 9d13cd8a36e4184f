package history_test

import (
	"fmt"

	"github.com/histrim/history"
)

// The messages of a Result share their Parts and ToolCalls with the
// caller's messages. Clone one before editing its parts or calls.
func ExampleMessage_Clone() {
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "Describe this screenshot.", Parts: []history.Part{
			{Type: history.PartImage, Width: 1024, Height: 768, MIMEType: "image/png"},
		}},
	}
	res, err := history.TrimToRecentTurns(msgs, 10_000)
	if err != nil {
		fmt.Println(err)
		return
	}

	edited := res.Messages[0].Clone()
	edited.Parts[0].Detail = "low" // a cheaper rendering, for this request only
	fmt.Println("sent:", edited.Parts[0].Detail, "- caller's:", msgs[0].Parts[0].Detail == "")

	shared := res.Messages[0] // a plain copy still shares Parts
	shared.Parts[0].Detail = "high"
	fmt.Println("caller's after editing a plain copy:", msgs[0].Parts[0].Detail)
	// Output:
	// sent: low - caller's: true
	// caller's after editing a plain copy: high
}
