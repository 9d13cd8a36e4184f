package openai

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/media"
)

// filePart describes a file content part from its file_data, which the API
// takes as a data URL or as bare base64: a file of the decoded size, with
// the data URL's media type. An empty file_data (a file referenced by ID)
// has an unknown size, 0.
func filePart(data string) history.Part {
	mime := ""
	if b64, m, ok := media.DataURL(data); ok {
		data, mime = b64, m
	}
	return history.Part{Type: history.PartFile, MIMEType: mime, Size: media.Base64Size(data)}
}
