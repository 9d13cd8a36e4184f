package media

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

func encode(t *testing.T, format string, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, img)
	case "jpeg":
		err = jpeg.Encode(&buf, img, nil)
	case "gif":
		err = gif.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestImageSize(t *testing.T) {
	for _, f := range []string{"png", "jpeg", "gif"} {
		data := encode(t, f, 640, 480)
		if w, h := ImageSize(data); w != 640 || h != 480 {
			t.Errorf("%s: %dx%d, want 640x480", f, w, h)
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			if w, h := ImageSizeBase64(enc.EncodeToString(data)); w != 640 || h != 480 {
				t.Errorf("%s base64: %dx%d, want 640x480", f, w, h)
			}
		}
	}
	for _, bad := range [][]byte{nil, []byte("not an image"), encode(t, "png", 10, 10)[:20]} {
		if w, h := ImageSize(bad); w != 0 || h != 0 {
			t.Errorf("ImageSize(%q) = %dx%d, want unknown", bad, w, h)
		}
	}
	if w, h := ImageSizeBase64("!!!not base64"); w != 0 || h != 0 {
		t.Errorf("invalid base64: %dx%d", w, h)
	}
}

func TestDataURL(t *testing.T) {
	tests := []struct {
		url, b64, mime string
		ok             bool
	}{
		{"data:image/png;base64,AAAA", "AAAA", "image/png", true},
		{"data:image/jpeg;name=x.jpg;base64,BBBB", "BBBB", "image/jpeg", true},
		{"data:text/plain,hello", "", "", false},
		{"https://example.com/a.png", "", "", false},
		{"data:image/png;base64", "", "", false},
	}
	for _, tc := range tests {
		b64, mime, ok := DataURL(tc.url)
		if b64 != tc.b64 || mime != tc.mime || ok != tc.ok {
			t.Errorf("DataURL(%q) = %q, %q, %v", tc.url, b64, mime, ok)
		}
	}
}

func TestBase64Size(t *testing.T) {
	for n := range 10 {
		s := base64.StdEncoding.EncodeToString(make([]byte, n))
		if got := Base64Size(s); got != int64(n) {
			t.Errorf("Base64Size(%q) = %d, want %d", s, got, n)
		}
	}
}
