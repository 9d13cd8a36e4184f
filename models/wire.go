package models

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
)

// Bounds on what Discover reads: a local server's answers are a few
// kilobytes (an Ollama /api/show with its license text, tens); OpenRouter's
// list of every model it routes is about a megabyte.
const (
	localLimit      = 1 << 20
	openRouterLimit = 8 << 20
	// maxTokens bounds the token counts Discover accepts from a server:
	// a larger figure is not a window any model has.
	maxTokens = math.MaxInt32
)

// errTooLarge reports a response body over the limit Discover reads.
var errTooLarge = errors.New("response body over the size Discover reads")

// answer is a server's response: its status and its body, bounded.
type answer struct {
	url    string
	status int
	body   []byte
}

// fetch sends one request and reads at most limit bytes of the answer. A
// transport failure (no connection, cancelled context) is its error; any
// HTTP status is an answer. A body over limit is errTooLarge.
func fetch(ctx context.Context, c *http.Client, method, url string, body []byte, limit int64) (answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return answer{}, err
	}
	a := answer{url: url, status: resp.StatusCode, body: data}
	if int64(len(data)) > limit {
		return a, fmt.Errorf("%s: %w (%d bytes)", url, errTooLarge, limit)
	}
	return a, nil
}

// ok reports a 2xx answer.
func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// object decodes a JSON object into its fields, each left raw so that one
// field of an unexpected type spoils only itself.
func object(raw []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// array decodes a JSON array into its elements, left raw.
func array(raw []byte) ([]json.RawMessage, bool) {
	var a []json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &a) != nil || a == nil {
		return nil, false
	}
	return a, true
}

// text decodes a JSON string.
func text(raw []byte) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// count decodes a token count: a JSON number (not a numeric string, not
// null) that is a whole number from 1 to maxTokens.
func count(raw []byte) (int, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		if i < 1 || i > maxTokens {
			return 0, false
		}
		return int(i), true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f < 1 || f > maxTokens || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// smallest returns the smallest of the values above 0, or 0 when none is.
func smallest(vs ...int) int {
	best := 0
	for _, v := range vs {
		if v > 0 && (best == 0 || v < best) {
			best = v
		}
	}
	return best
}
