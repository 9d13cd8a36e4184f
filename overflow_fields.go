// This file owns how the overflow classifier reads what an error carries
// besides its text: status codes kept in struct fields, and the JSON body
// of an SDK error, flattened into the lines the classifier matches.

package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// structured is what an error exposes through the small interfaces.
type structured struct {
	status        int
	code, message string
	raw           string
}

// safeStructured reads e's status, code, message and body through the small
// interfaces; a method that panics leaves the fields read after it empty.
func safeStructured(e error) (st structured) {
	defer func() { _ = recover() }()
	if s, ok := e.(httpStatusCoder); ok && vetoStatus(s.HTTPStatusCode()) {
		st.status = s.HTTPStatusCode()
	}
	if s, ok := e.(statusCoder); ok && st.status == 0 {
		st.status = s.StatusCode()
	}
	if s, ok := e.(httpCoder); ok && st.status <= 0 {
		st.status = s.HTTPCode()
	}
	if st.status == 0 {
		st.status = statusField(e)
	}
	if c, ok := e.(errorCoder); ok {
		st.code = c.ErrorCode()
	}
	if m, ok := e.(errorMessager); ok {
		st.message = m.ErrorMessage()
	}
	if r, ok := e.(rawJSONer); ok {
		st.raw = r.RawJSON()
	}
	return st
}

// statusField returns the HTTP status an SDK error keeps in an integer
// field rather than behind a method (genai.APIError.Code, openai-go's and
// anthropic-sdk-go's StatusCode), or 0. Only a struct or a non-nil pointer
// to one is read, and only a value that is an HTTP status (100-599).
func statusField(e error) int {
	v := reflect.ValueOf(e)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0
	}
	for _, name := range [...]string{"StatusCode", "HTTPStatusCode", "Code"} {
		f := v.FieldByName(name)
		if f.IsValid() && f.CanInt() {
			if c := f.Int(); c >= 100 && c <= 599 {
				return int(c)
			}
		}
	}
	return 0
}

// vetoStatus reports whether an HTTP status rules an overflow out:
// authentication, payment, permission and rate limits.
func vetoStatus(code int) bool {
	switch code {
	case 401, 402, 403, 429:
		return true
	}
	return false
}

// jsonErrorFields are the members of a JSON error body that are read; all
// others (an echoed prompt, headers, metadata that names nothing) are not.
// Matching of member names is case-insensitive (encoding/json).
type jsonErrorFields struct {
	Error         json.RawMessage `json:"error"`
	Errors        json.RawMessage `json:"errors"`
	Message       json.RawMessage `json:"message"`
	Msg           json.RawMessage `json:"msg"`
	Detail        json.RawMessage `json:"detail"`
	Details       json.RawMessage `json:"details"`
	Code          json.RawMessage `json:"code"`
	Type          json.RawMessage `json:"type"`
	Status        json.RawMessage `json:"status"`
	StatusCode    json.RawMessage `json:"status_code"`
	Reason        json.RawMessage `json:"reason"`
	Title         json.RawMessage `json:"title"`
	Param         json.RawMessage `json:"param"`
	ErrorCode     json.RawMessage `json:"error_code"`
	ErrorType     json.RawMessage `json:"error_type"`
	ErrorMessage  json.RawMessage `json:"error_message"`
	Metadata      json.RawMessage `json:"metadata"`
	Raw           json.RawMessage `json:"raw"`
	NPromptTokens json.RawMessage `json:"n_prompt_tokens"`
	NCtx          json.RawMessage `json:"n_ctx"`
}

// examineJSON reads a response body. When it decodes as JSON, only its
// error members are examined (see jsonErrorFields), as one text of
// "name: value" lines in document order, so that an echoed prompt cannot
// pose as an error; a numeric code or status of 401, 402, 403 or 429 is a
// veto like an HTTP status. A body that does not decode (an HTML page from a
// proxy, a truncated body) is examined as plain text, so it counts only if
// its text carries an overflow phrase.
func (c *classifier) examineJSON(raw string) {
	body := strings.TrimSpace(raw)
	if body == "" {
		return
	}
	if len(body) > c.budget {
		c.examine(body) // examines what the budget allows
		return
	}
	var out []byte
	if (body[0] == '{' || body[0] == '[') && c.readJSON(&out, []byte(body), 0) {
		c.budget -= len(body) // the decoding is paid for like a scan
		c.examine(string(out))
		return
	}
	c.examine(body)
}

// readJSON appends the error members of the JSON value v to out. It returns
// false when v is not valid JSON.
func (c *classifier) readJSON(out *[]byte, v []byte, depth int) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case '{':
		var f jsonErrorFields
		if json.Unmarshal(v, &f) != nil {
			return false
		}
		members := [...]struct {
			name string
			v    json.RawMessage
		}{
			{"error", f.Error}, {"errors", f.Errors}, {"message", f.Message}, {"msg", f.Msg},
			{"detail", f.Detail}, {"details", f.Details}, {"code", f.Code}, {"type", f.Type},
			{"status", f.Status}, {"status_code", f.StatusCode}, {"reason", f.Reason}, {"title", f.Title},
			{"param", f.Param}, {"error_code", f.ErrorCode}, {"error_type", f.ErrorType},
			{"error_message", f.ErrorMessage}, {"metadata", f.Metadata}, {"raw", f.Raw},
			{"n_prompt_tokens", f.NPromptTokens}, {"n_ctx", f.NCtx},
		}
		for _, m := range members {
			if len(m.v) > 0 {
				c.readMember(out, m.name, m.v, depth)
			}
		}
		return true
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return false
		}
		for i, it := range items {
			if i == maxJSONItems {
				break
			}
			c.readMember(out, "", it, depth)
		}
		return true
	}
	return false
}

// readMember appends one member's value: strings as "name: value" lines (a
// string holding a JSON document is decoded in its place), numbers likewise,
// objects and arrays recursively.
func (c *classifier) readMember(out *[]byte, name string, v json.RawMessage, depth int) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || depth >= maxJSONDepth {
		return
	}
	switch v[0] {
	case '{', '[':
		c.readJSON(out, v, depth+1)
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return
		}
		if t := strings.TrimSpace(s); t != "" && (t[0] == '{' || t[0] == '[') {
			if c.readJSON(out, []byte(t), depth+1) {
				return
			}
		}
		if (name == "code" || name == "status" || name == "status_code") && statusVeto(s) {
			c.vetoed = true
		}
		appendLine(out, name, s)
	case 'n', 't', 'f': // null, true, false
	default:
		if (name == "code" || name == "status" || name == "status_code") && statusVeto(string(v)) {
			c.vetoed = true
		}
		appendLine(out, name, string(v))
	}
}

// statusVeto reports whether a JSON code or status member holds a vetoed
// HTTP status.
func statusVeto(s string) bool {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	return err == nil && vetoStatus(n)
}

func appendLine(out *[]byte, name, value string) {
	if name != "" {
		*out = append(*out, name...)
		*out = append(*out, ": "...)
	}
	*out = append(*out, value...)
	*out = append(*out, '\n')
}
