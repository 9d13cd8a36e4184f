//go:build unix

package main

// A headless Chromium driven over the Chrome DevTools Protocol, with a
// websocket client of the standard library's parts: enough for the browser
// test to open a page, collect its console and log errors, query its DOM
// and take a screenshot, without a dependency in the root module.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// wsConn is the client end of a websocket (RFC 6455): text frames out,
// masked; messages in, reassembled from their frames.
type wsConn struct {
	c net.Conn
	r *bufio.Reader
}

// wsGUID is the key suffix of the opening handshake (RFC 6455, 1.3).
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// dialWS opens a websocket to a ws:// URL.
func dialWS(raw string) (*wsConn, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		c.Close()
		return nil, err
	}
	key := base64.StdEncoding.EncodeToString(nonce)
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
		"\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	r := bufio.NewReaderSize(c, 1<<16)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		c.Close()
		return nil, errors.New("websocket handshake refused: " + resp.Status)
	}
	return &wsConn{c: c, r: r}, nil
}

// send writes p as one masked text frame.
func (w *wsConn) send(p []byte) error {
	return w.frame(0x1, p)
}

func (w *wsConn) frame(op byte, p []byte) error {
	hdr := []byte{0x80 | op, 0}
	switch n := len(p); {
	case n < 126:
		hdr[1] = 0x80 | byte(n)
	case n <= 0xFFFF:
		hdr[1] = 0x80 | 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr[1] = 0x80 | 127
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	if _, err := rand.Read(mask[:]); err != nil {
		return err
	}
	hdr = append(hdr, mask[:]...)
	body := make([]byte, len(p))
	for i := range p {
		body[i] = p[i] ^ mask[i%4]
	}
	_, err := w.c.Write(append(hdr, body...))
	return err
}

// recv returns the next text or binary message, answering pings.
func (w *wsConn) recv() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.r, h[:]); err != nil {
			return nil, err
		}
		fin, op := h[0]&0x80 != 0, h[0]&0x0F
		n := uint64(h[1] & 0x7F)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.r, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.r, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		var mask [4]byte
		masked := h[1]&0x80 != 0
		if masked {
			if _, err := io.ReadFull(w.r, mask[:]); err != nil {
				return nil, err
			}
		}
		if n > 256<<20 {
			return nil, errors.New("websocket frame too large")
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(w.r, p); err != nil {
			return nil, err
		}
		if masked {
			for i := range p {
				p[i] ^= mask[i%4]
			}
		}
		switch op {
		case 0x8:
			return nil, io.EOF // close
		case 0x9:
			if err := w.frame(0xA, p); err != nil {
				return nil, err
			}
			continue
		case 0xA:
			continue
		}
		msg = append(msg, p...)
		if fin {
			return msg, nil
		}
	}
}

// browser is a headless Chromium and a DevTools session with one of its
// pages.
type browser struct {
	t      *testing.T
	cmd    *exec.Cmd
	ws     *wsConn
	id     int
	events []cdpMessage // received, not yet consumed
	logMu  sync.Mutex
	log    bytes.Buffer // Chromium's stderr, for failures
}

// cdpMessage is a DevTools protocol message: a reply (ID) or an event
// (Method).
type cdpMessage struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

var devtoolsRE = regexp.MustCompile(`DevTools listening on (ws://[^\s]+)`)

// startBrowser starts Chromium at path, headless, with its own profile,
// and attaches to its page; the test's cleanup stops it.
func startBrowser(t *testing.T, path string) *browser {
	t.Helper()
	b := &browser{t: t}
	profile, err := os.MkdirTemp("", "histrim-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	b.cmd = exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--hide-scrollbars", "--mute-audio", "--user-data-dir="+profile, "--remote-debugging-port=0",
		"--window-size=1400,1000", "about:blank")
	// Chromium's helper processes go on writing its profile after the
	// browser process is killed: kill the whole group, and remove the
	// profile once they are gone.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	t.Cleanup(func() {
		if b.ws != nil {
			b.ws.c.Close()
		}
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		_ = b.cmd.Wait()
		for range 50 { // the group's last processes may still be exiting
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	found := make(chan string, 1)
	go func() { // read stderr to its end, so that Chromium never blocks on it
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			b.logMu.Lock()
			b.log.WriteString(line + "\n")
			b.logMu.Unlock()
			if m := devtoolsRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	var browserURL string
	select {
	case browserURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatalf("Chromium did not open its DevTools port in 30 s:\n%s", b.stderr())
	}
	u, _ := url.Parse(browserURL)
	pageURL, err := pageTarget(u.Host)
	if err != nil {
		t.Fatalf("finding the page: %v\n%s", err, b.stderr())
	}
	if b.ws, err = dialWS(pageURL); err != nil {
		t.Fatalf("connecting to %s: %v", pageURL, err)
	}
	return b
}

// pageTarget returns the DevTools websocket of the first page at host.
func pageTarget(host string) (string, error) {
	client := http.Client{Timeout: 10 * time.Second}
	for range 50 {
		resp, err := client.Get("http://" + host + "/json/list")
		if err != nil {
			return "", err
		}
		var targets []struct {
			Type, WebSocketDebuggerURL string
		}
		err = json.NewDecoder(resp.Body).Decode(&targets)
		resp.Body.Close()
		if err != nil {
			return "", err
		}
		for _, tg := range targets {
			if tg.Type == "page" && tg.WebSocketDebuggerURL != "" {
				return tg.WebSocketDebuggerURL, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", errors.New("no page target")
}

func (b *browser) stderr() string {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	return b.log.String()
}

// next returns the next message from the page, within the deadline.
func (b *browser) next(deadline time.Time) cdpMessage {
	b.t.Helper()
	_ = b.ws.c.SetReadDeadline(deadline)
	data, err := b.ws.recv()
	if err != nil {
		b.t.Fatalf("DevTools: %v\n%s", err, b.stderr())
	}
	var m cdpMessage
	if err := json.Unmarshal(data, &m); err != nil {
		b.t.Fatalf("DevTools sent %.200q: %v", data, err)
	}
	return m
}

// call sends a command and returns its result, keeping the events that
// arrive meanwhile.
func (b *browser) call(method string, params any, result any) {
	b.t.Helper()
	b.id++
	msg, err := json.Marshal(map[string]any{"id": b.id, "method": method, "params": params})
	if err != nil {
		b.t.Fatal(err)
	}
	if err := b.ws.send(msg); err != nil {
		b.t.Fatalf("DevTools %s: %v", method, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := b.next(deadline)
		if m.ID == 0 {
			b.events = append(b.events, m)
			continue
		}
		if m.ID != b.id {
			continue
		}
		if m.Error != nil {
			b.t.Fatalf("DevTools %s: %s", method, m.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				b.t.Fatalf("DevTools %s: %v", method, err)
			}
		}
		return
	}
}

// wait returns once an event of the given method has arrived.
func (b *browser) wait(method string) {
	b.t.Helper()
	for _, e := range b.events {
		if e.Method == method {
			return
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := b.next(deadline)
		if m.ID == 0 {
			b.events = append(b.events, m)
			if m.Method == method {
				return
			}
		}
	}
}

// open navigates the page to u with a viewport of width by height CSS
// pixels at scale 1, and waits for its load event.
func (b *browser) open(u string, width, height int) {
	b.t.Helper()
	b.events = nil
	b.call("Page.enable", struct{}{}, nil)
	b.call("Runtime.enable", struct{}{}, nil)
	b.call("Log.enable", struct{}{}, nil)
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	b.events = nil
	b.call("Page.navigate", map[string]any{"url": u}, nil)
	b.wait("Page.loadEventFired")
	// Let layout and the late console messages settle.
	b.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(0))))", nil)
}

// eval evaluates expr in the page (awaiting a promise) and decodes its
// JSON value into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res)
	if res.ExceptionDetails != nil {
		b.t.Fatalf("evaluating %q: %s", expr, res.ExceptionDetails.Text)
	}
	if out != nil {
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			b.t.Fatalf("evaluating %q: %v", expr, err)
		}
	}
}

// problems returns the errors the page reported since it was opened:
// console.error and console.assert calls, uncaught exceptions, and log
// entries at level error (a resource that failed to load, a blocked
// request, a parse error).
func (b *browser) problems() []string {
	var out []string
	for _, e := range b.events {
		switch e.Method {
		case "Runtime.consoleAPICalled":
			var p struct {
				Type string `json:"type"`
				Args []struct {
					Value       any    `json:"value"`
					Description string `json:"description"`
				} `json:"args"`
			}
			_ = json.Unmarshal(e.Params, &p)
			if p.Type == "error" || p.Type == "assert" {
				var parts []string
				for _, a := range p.Args {
					if s, ok := a.Value.(string); ok {
						parts = append(parts, s)
					} else if a.Description != "" {
						parts = append(parts, a.Description)
					} else {
						v, _ := json.Marshal(a.Value)
						parts = append(parts, string(v))
					}
				}
				out = append(out, "console."+p.Type+": "+strings.Join(parts, " "))
			}
		case "Runtime.exceptionThrown":
			var p struct {
				ExceptionDetails struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			_ = json.Unmarshal(e.Params, &p)
			out = append(out, "exception: "+p.ExceptionDetails.Text+" "+p.ExceptionDetails.Exception.Description)
		case "Log.entryAdded":
			var p struct {
				Entry struct {
					Level, Source, Text, URL string
				} `json:"entry"`
			}
			_ = json.Unmarshal(e.Params, &p)
			if p.Entry.Level == "error" {
				out = append(out, "log ("+p.Entry.Source+"): "+p.Entry.Text+" "+p.Entry.URL)
			}
		}
	}
	return out
}

// screenshot returns a PNG of the page: the viewport, or the clip
// {x, y, width, height} in CSS pixels.
func (b *browser) screenshot(clip map[string]float64) []byte {
	b.t.Helper()
	params := map[string]any{"format": "png"}
	if clip != nil {
		clip["scale"] = 1
		params["clip"] = clip
		params["captureBeyondViewport"] = true
	}
	var res struct {
		Data string `json:"data"`
	}
	b.call("Page.captureScreenshot", params, &res)
	png, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	return png
}
