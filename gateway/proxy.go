package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The APIs the gateway tells apart by path, as the metrics label them.
const (
	apiChat      = "chat"      // OpenAI Chat Completions and compatible servers
	apiResponses = "responses" // OpenAI Responses
	apiMessages  = "messages"  // Anthropic Messages
	apiGemini    = "gemini"    // Gemini generateContent
	apiOther     = "other"     // anything else, forwarded untouched
)

var apis = []string{apiChat, apiResponses, apiMessages, apiGemini, apiOther}

// apiOf names the API of a request path.
func apiOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return apiChat
	case strings.HasSuffix(path, "/responses"):
		return apiResponses
	case strings.HasSuffix(path, "/messages"):
		return apiMessages
	case strings.HasSuffix(path, ":generateContent"), strings.HasSuffix(path, ":streamGenerateContent"):
		return apiGemini
	}
	return apiOther
}

// publicUpstreams are the endpoints of the APIs when no upstream is set.
var publicUpstreams = map[string]*url.URL{
	apiChat:      {Scheme: "https", Host: "api.openai.com"},
	apiResponses: {Scheme: "https", Host: "api.openai.com"},
	apiMessages:  {Scheme: "https", Host: "api.anthropic.com"},
	apiGemini:    {Scheme: "https", Host: "generativelanguage.googleapis.com"},
}

// target returns the URL a request for in goes to: the upstream's, its
// path followed by in's, with in's query; nil when there is none.
func (g *Gateway) target(in *url.URL, api string) *url.URL {
	base := g.s.upstream
	if base == nil {
		base = publicUpstreams[api]
		if base == nil {
			return nil
		}
	}
	u := *base
	u.User = base.User
	u.Path = strings.TrimSuffix(base.Path, "/") + in.Path
	if base.RawPath != "" || in.RawPath != "" {
		u.RawPath = strings.TrimSuffix(base.EscapedPath(), "/") + in.EscapedPath()
	}
	u.RawQuery = in.RawQuery
	u.Fragment = ""
	return &u
}

// hopHeaders are the hop-by-hop headers (RFC 9110, 7.6.1), which a proxy
// does not forward.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// dropHop removes the hop-by-hop headers from h, and those its Connection
// header names.
func dropHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// proxy forwards one request and streams the answer back.
func (g *Gateway) proxy(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	api := apiOf(r.URL.Path)
	status := 0
	defer func() {
		if status == 499 {
			g.metrics.request(api, status)
		}
		g.log.Info("gateway: request", "method", r.Method, "path", r.URL.Path, "api", api,
			"status", status, "duration", time.Since(start).Round(time.Microsecond).String())
	}()
	target := g.target(r.URL, api)
	if target == nil {
		status = http.StatusNotFound
		g.metrics.request(api, status)
		writeError(w, status, "not_found", "no upstream is set (-upstream) and the path names no API the gateway knows")
		return
	}
	if r.ContentLength > g.s.MaxBodyBytes {
		status = http.StatusRequestEntityTooLarge
		g.metrics.request(api, status)
		writeError(w, status, "request_too_large", "the request body is over "+strconv.FormatInt(g.s.MaxBodyBytes, 10)+" bytes")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.s.UpstreamTimeout)
	defer cancel()
	out := r.Clone(ctx)
	out.URL, out.Host, out.RequestURI = target, "", ""
	out.Close = false
	if r.Body != nil && r.Body != http.NoBody {
		out.Body = http.MaxBytesReader(w, r.Body, g.s.MaxBodyBytes)
	}
	dropHop(out.Header)
	// Without the client's Accept-Encoding the transport asks for gzip
	// itself and decompresses, so that the trimming transport reads the
	// usage of the answers; the client gets them uncompressed.
	out.Header.Del("Accept-Encoding")
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = nil // send none rather than Go's
	}

	resp, err := g.rt.RoundTrip(out)
	if err != nil {
		var mbe *http.MaxBytesError
		typ, msg := "upstream_error", ""
		switch {
		case errors.As(err, &mbe):
			status, typ = http.StatusRequestEntityTooLarge, "request_too_large"
			msg = "the request body is over " + strconv.FormatInt(g.s.MaxBodyBytes, 10) + " bytes"
		case r.Context().Err() != nil:
			status = 499 // the client went away; counted on return
			return
		case ctx.Err() != nil:
			status, typ = http.StatusGatewayTimeout, "upstream_timeout"
			msg = "the upstream did not answer within " + g.s.UpstreamTimeout.String()
		default:
			status = http.StatusBadGateway
			msg = "the upstream could not be reached: " + err.Error()
			g.log.Warn("gateway: upstream unreachable", "api", api, "error", err.Error())
		}
		g.metrics.request(api, status)
		writeError(w, status, typ, msg)
		return
	}
	defer resp.Body.Close()
	status = resp.StatusCode

	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	dropHop(h)
	announced := make([]string, 0, len(resp.Trailer))
	for k := range resp.Trailer {
		announced = append(announced, k)
	}
	if len(announced) > 0 {
		h.Set("Trailer", strings.Join(announced, ", "))
	}
	// Counted before the client can have read the answer.
	g.metrics.request(api, status)
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush() // the client sees the headers before the first event
	if err := copyFlushing(w, rc, resp.Body); err != nil {
		if r.Context().Err() == nil && !errors.Is(err, errClientWrite) {
			// The upstream broke off mid-body (or UpstreamTimeout
			// passed): abort the client's response so that it sees a
			// broken body, not a complete one.
			g.log.Warn("gateway: upstream body broke off", "api", api, "error", err.Error())
			panic(http.ErrAbortHandler)
		}
		return
	}
	for k, vs := range resp.Trailer {
		h[k] = vs
	}
}

var errClientWrite = errors.New("history: gateway: writing to the client failed")

// copyFlushing copies body to w, flushing after every read: each event of
// a stream reaches the client as soon as the upstream sent it.
func copyFlushing(w io.Writer, rc *http.ResponseController, body io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return errClientWrite
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return errClientWrite
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// writeError answers with a JSON error of the gateway's own.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"type": typ, "message": "histrim gateway: " + msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
