package mediapart

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"testing"

	"github.com/histrim/history"
)

// pngOf returns a w x h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestIsImage(t *testing.T) {
	for mime, want := range map[string]bool{"image/png": true, "IMAGE/JPEG": true, "image/": true, "image": false, "application/pdf": false, "": false} {
		if got := IsImage(mime); got != want {
			t.Errorf("IsImage(%q) = %v, want %v", mime, got, want)
		}
	}
}

func TestParts(t *testing.T) {
	img := pngOf(t, 40, 30)
	b64 := base64.StdEncoding.EncodeToString(img)
	pdf := base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n")) // 9 bytes, one '=' of padding
	tests := []struct {
		name   string
		got    history.Part
		want   history.Part
		reason string
	}{
		{"blob image", Blob("image/png", img), history.Part{Type: history.PartImage, MIMEType: "image/png", Width: 40, Height: 30}, "dimensions from the header"},
		{"blob file", Blob("application/pdf", []byte("abc")), history.Part{Type: history.PartFile, MIMEType: "application/pdf", Size: 3}, "size of the bytes"},
		{"blob referenced", Blob("image/png", nil), history.Part{Type: history.PartImage, MIMEType: "image/png"}, "no bytes, nothing known"},
		{"base64 image", Base64("image/png", b64, "low", false), history.Part{Type: history.PartImage, MIMEType: "image/png", Detail: "low", Width: 40, Height: 30}, "an image by its media type"},
		{"base64 forced image", Base64("", b64, "", true), history.Part{Type: history.PartImage, Width: 40, Height: 30}, "an image because the SDK says so"},
		{"base64 file", Base64("application/pdf", pdf, "", false), history.Part{Type: history.PartFile, MIMEType: "application/pdf", Size: 9}, "the decoded size, padding counted out"},
		{"data URL", URL("data:image/png;base64,"+b64, "", "high", false), history.Part{Type: history.PartImage, MIMEType: "image/png", Detail: "high", Width: 40, Height: 30}, "the data URL's media type stands in"},
		{"data URL, own type", URL("data:application/octet-stream;base64,"+pdf, "application/pdf", "", false), history.Part{Type: history.PartFile, MIMEType: "application/pdf", Size: 9}, "the given media type wins"},
		{"remote image", URL("https://example.com/a.png", "", "low", true), history.Part{Type: history.PartImage, Detail: "low"}, "remote: size unknown"},
		{"remote file", URL("https://example.com/a.pdf", "application/pdf", "", false), history.Part{Type: history.PartFile, MIMEType: "application/pdf"}, "remote: size unknown"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %+v, want %+v (%s)", tc.name, tc.got, tc.want, tc.reason)
		}
	}
}
