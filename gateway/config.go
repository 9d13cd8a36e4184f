package gateway

import (
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of the settings a zero Config leaves unset.
const (
	DefaultAddr            = "127.0.0.1:8080"
	DefaultStore           = "memory:"
	DefaultMaxBodyBytes    = 32 << 20
	DefaultHeaderTimeout   = 10 * time.Second
	DefaultUpstreamTimeout = 10 * time.Minute
	DefaultIdleTimeout     = 2 * time.Minute
	DefaultShutdownTimeout = 30 * time.Second
)

// Config is the gateway's configuration. The zero value works: it listens
// on [DefaultAddr], keeps conversations in memory and sends each request to
// its API's public endpoint (see Upstream). Set it from the environment
// with [Config.ApplyEnv], then from flags with [Config.RegisterFlags];
// [New] fills in what is left at zero.
type Config struct {
	// Addr is the address to listen on (HISTRIM_ADDR, -addr).
	Addr string
	// Upstream is the base URL requests are forwarded to, their path
	// appended to its own (HISTRIM_UPSTREAM, -upstream): an OpenAI
	// compatible server, OpenAI, Anthropic or Gemini. Empty: each request
	// goes to the public endpoint of the API its path names
	// (/v1/chat/completions and /v1/responses to https://api.openai.com,
	// /v1/messages to https://api.anthropic.com, .../models/M:generateContent
	// to https://generativelanguage.googleapis.com); a request of no known
	// API then gets 404.
	Upstream string
	// Store is the URL of the conversations' state store (HISTRIM_STORE,
	// -store): "memory:" (the default; one process), or a scheme
	// registered with [RegisterStore] (the histrim-gateway command adds
	// redis:// and postgres://).
	Store string
	// Window, when positive, is the context window in tokens of every
	// model the upstream serves, instead of the models table's
	// (HISTRIM_WINDOW, -window): a local server run with a smaller
	// context (llama.cpp -c, Ollama num_ctx, vLLM --max-model-len), or a
	// model the table does not know. The transport then takes the
	// upstream for one that may cut an over-long prompt silently, as a
	// local server does, and learns a smaller window from a usage that
	// shows it. 0: the table's; a model it does not know is forwarded
	// untrimmed.
	Window int
	// MaxBodyBytes bounds a request's body (HISTRIM_MAX_BODY_BYTES,
	// -max-body-bytes); a larger one gets 413. 0: [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// HeaderTimeout bounds the reading of a request's headers
	// (HISTRIM_HEADER_TIMEOUT, -header-timeout). 0: [DefaultHeaderTimeout].
	HeaderTimeout time.Duration
	// UpstreamTimeout bounds a whole exchange with the upstream, the
	// response's body (a stream) included (HISTRIM_UPSTREAM_TIMEOUT,
	// -upstream-timeout); past it the client gets 504, or a stream
	// is cut. 0: [DefaultUpstreamTimeout].
	UpstreamTimeout time.Duration
	// IdleTimeout bounds how long a client's idle keep-alive connection
	// is kept (HISTRIM_IDLE_TIMEOUT, -idle-timeout). 0:
	// [DefaultIdleTimeout].
	IdleTimeout time.Duration
	// ShutdownTimeout bounds how long a shutdown waits for the requests
	// in flight (HISTRIM_SHUTDOWN_TIMEOUT, -shutdown-timeout); past it
	// their connections are closed. 0: [DefaultShutdownTimeout].
	ShutdownTimeout time.Duration
	// Transport carries requests to the upstream, under the trimming
	// transport. Nil: a clone of http.DefaultTransport.
	Transport http.RoundTripper
}

// envNames maps each setting to its environment variable.
var envNames = []struct{ env, flag string }{
	{"HISTRIM_ADDR", "addr"},
	{"HISTRIM_UPSTREAM", "upstream"},
	{"HISTRIM_STORE", "store"},
	{"HISTRIM_WINDOW", "window"},
	{"HISTRIM_MAX_BODY_BYTES", "max-body-bytes"},
	{"HISTRIM_HEADER_TIMEOUT", "header-timeout"},
	{"HISTRIM_UPSTREAM_TIMEOUT", "upstream-timeout"},
	{"HISTRIM_IDLE_TIMEOUT", "idle-timeout"},
	{"HISTRIM_SHUTDOWN_TIMEOUT", "shutdown-timeout"},
}

// ApplyEnv sets each setting whose environment variable (read through
// getenv, os.Getenv in a program) is not empty; the variables are named
// in Config's fields. It returns a *ConfigError for a value that does not
// parse, leaving the settings before it set.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	fs := flag.NewFlagSet("env", flag.ContinueOnError)
	c.bind(fs)
	for _, e := range envNames {
		v := getenv(e.env)
		if v == "" {
			continue
		}
		if err := fs.Set(e.flag, v); err != nil {
			return &ConfigError{Setting: e.env, Value: v, Err: err}
		}
	}
	return nil
}

// RegisterFlags defines the gateway's flags on fs, their defaults the
// settings c holds (so that flags override the environment when
// [Config.ApplyEnv] came first); parsing fs sets c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) { c.bind(fs) }

func (c *Config) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "`address` to listen on (default "+DefaultAddr+"; HISTRIM_ADDR)")
	fs.StringVar(&c.Upstream, "upstream", c.Upstream, "base `URL` to forward to (default: each API's public endpoint; HISTRIM_UPSTREAM)")
	fs.StringVar(&c.Store, "store", c.Store, "conversation state store `URL` (default "+DefaultStore+"; "+strings.Join(StoreSchemes(), ", ")+"; HISTRIM_STORE)")
	fs.IntVar(&c.Window, "window", c.Window, "context window in `tokens` of every model, instead of the models table (default: the table's; HISTRIM_WINDOW)")
	fs.Var((*bytesValue)(&c.MaxBodyBytes), "max-body-bytes", "largest request body in `bytes` (default "+strconv.Itoa(DefaultMaxBodyBytes)+"; HISTRIM_MAX_BODY_BYTES)")
	fs.DurationVar(&c.HeaderTimeout, "header-timeout", c.HeaderTimeout, "time to read a request's headers (default "+DefaultHeaderTimeout.String()+"; HISTRIM_HEADER_TIMEOUT)")
	fs.DurationVar(&c.UpstreamTimeout, "upstream-timeout", c.UpstreamTimeout, "time for a whole upstream exchange, stream included (default "+DefaultUpstreamTimeout.String()+"; HISTRIM_UPSTREAM_TIMEOUT)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "time an idle client connection is kept (default "+DefaultIdleTimeout.String()+"; HISTRIM_IDLE_TIMEOUT)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "time a shutdown waits for requests in flight (default "+DefaultShutdownTimeout.String()+"; HISTRIM_SHUTDOWN_TIMEOUT)")
}

// bytesValue is a flag.Value of a positive byte count.
type bytesValue int64

func (b *bytesValue) String() string {
	if b == nil || *b == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *bytesValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a positive number of bytes")
	}
	*b = bytesValue(n)
	return nil
}

// ConfigError reports a setting that cannot be used.
type ConfigError struct {
	// Setting names the setting (a field, a flag or a variable), Value
	// what it was given.
	Setting, Value string
	// Err says why it was refused.
	Err error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("history: gateway: %s %q: %v", e.Setting, e.Value, e.Err)
}

// Unwrap returns the reason.
func (e *ConfigError) Unwrap() error { return e.Err }

// settings is a Config with its defaults filled in and its URLs parsed.
type settings struct {
	Config
	upstream *url.URL // nil: by API
	store    *url.URL
}

// resolve fills in c's defaults and checks it.
func (c Config) resolve() (settings, error) {
	s := settings{Config: c}
	if s.Addr == "" {
		s.Addr = DefaultAddr
	}
	if s.Store == "" {
		s.Store = DefaultStore
	}
	if s.Window < 0 {
		return s, &ConfigError{Setting: "window", Value: strconv.Itoa(s.Window), Err: fmt.Errorf("want a positive number of tokens, or 0 for the models table")}
	}
	if s.MaxBodyBytes <= 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	for _, d := range []struct {
		p *time.Duration
		v time.Duration
	}{{&s.HeaderTimeout, DefaultHeaderTimeout}, {&s.UpstreamTimeout, DefaultUpstreamTimeout},
		{&s.IdleTimeout, DefaultIdleTimeout}, {&s.ShutdownTimeout, DefaultShutdownTimeout}} {
		if *d.p <= 0 {
			*d.p = d.v
		}
	}
	if s.Upstream != "" {
		u, err := url.Parse(s.Upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return s, &ConfigError{Setting: "upstream", Value: redact(s.Upstream), Err: fmt.Errorf("want an http or https URL")}
		}
		s.upstream = u
	}
	u, err := url.Parse(s.Store)
	if err != nil || u.Scheme == "" {
		return s, &ConfigError{Setting: "store", Value: redact(s.Store), Err: fmt.Errorf("want a URL such as %s", DefaultStore)}
	}
	s.store = u
	return s, nil
}

// redact returns a URL without its password, for messages and logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
