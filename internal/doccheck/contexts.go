package doccheck

import (
	"maps"
	"strings"
)

// A context is what a snippet compiles with: the module whose dependencies
// it may import, the package names the docs use for those packages, and
// the well-known names the prose defines.
type context struct {
	name   string
	module string // the module's directory, relative to the repository root
	// keys are the import paths that choose this context: a snippet that
	// uses one of them compiles here (the first context in contexts wins).
	keys []string
	// packages maps a package name, as the docs write it, to its import
	// path; a snippet's own imports come first.
	packages map[string]string
	// names are the package-level declarations of the well-known names,
	// one a name (the identifier after var or type), each declared when a
	// snippet uses the name without declaring it. They name packages of
	// packages.
	names []string
}

// common are the packages every context knows: the standard library's
// that the docs use, and the core's.
var common = map[string]string{
	"base64":   "encoding/base64",
	"binary":   "encoding/binary",
	"context":  "context",
	"errors":   "errors",
	"fmt":      "fmt",
	"http":     "net/http",
	"io":       "io",
	"json":     "encoding/json",
	"log":      "log",
	"os":       "os",
	"slices":   "slices",
	"slog":     "log/slog",
	"strconv":  "strconv",
	"strings":  "strings",
	"sync":     "sync",
	"time":     "time",
	"history":  "github.com/histrim/history",
	"fit":      "github.com/histrim/history/fit",
	"gateway":  "github.com/histrim/history/gateway",
	"models":   "github.com/histrim/history/models",
	"tiktoken": "github.com/histrim/history/tiktoken",
	"wire":     "github.com/histrim/history/wire",
}

// commonNames are the well-known names every context declares the same
// way. The prose uses them as inputs that the caller has: a snippet
// declares what it computes (res, err, ...) itself.
var commonNames = []string{
	"var ctx context.Context",
	"var window int // the model's context window, in tokens",
	"var budget int // what the messages may take, in tokens",
	"var maxOutput int",
	"var attempt int",
	"var conversationID string",
	"var providerErr error // the provider's answer to the request",
	"var cal history.Calibration // one per model",
	"var opts []history.Option",
	"var logger *slog.Logger",
	"var store interface { history.StateStore; Recall(scope string) history.Store } // a backend: redisstore, pgstore",
}

// coreNames are the names of the snippets on the core's types
// (history.Message): the core's and the stores'.
var coreNames = []string{
	"var msgs []history.Message",
	"var transcript []history.Message",
	"var working []history.Message",
	"var grown []history.Message",
	"var i int // a message's index",
	"var usage struct{ PromptTokens int } // the response's usage",
	"var provider interface { Send(context.Context, []history.Message) (*history.Message, error) }",
	"var handle func(reply *history.Message) error",
	"var archive func(dropped []history.Message)",
	"var send func([]history.Message)",
	"var res history.Result // the Result of the request's trim",
	"var stateCounter interface { WithLabelValues(...string) interface{ Inc() } } // a Prometheus counter vector",
	`type myStore struct{}

func (*myStore) lookup(handle string) (history.Message, bool) { return history.Message{}, false }`,
}

// contexts, in the order they are tried: the first whose key a snippet
// uses is its context; the core's, last, takes the rest.
var contexts = []context{
	{
		name: "openai", module: "adapters/openai",
		keys: []string{"github.com/histrim/history/adapters/openai"},
		packages: map[string]string{
			"hopenai": "github.com/histrim/history/adapters/openai",
			"openai":  "github.com/openai/openai-go/v3",
		},
		names: []string{
			"var client openai.Client",
			"var params openai.ChatCompletionNewParams",
			"var msgs []openai.ChatCompletionMessageParamUnion",
			"var transcript []openai.ChatCompletionMessageParamUnion",
		},
	},
	{
		name: "responses", module: "adapters/responses",
		keys: []string{"github.com/histrim/history/adapters/responses"},
		packages: map[string]string{
			"hresponses": "github.com/histrim/history/adapters/responses",
			"openai":     "github.com/openai/openai-go/v3",
			"option":     "github.com/openai/openai-go/v3/option",
			"responses":  "github.com/openai/openai-go/v3/responses",
		},
		names: []string{
			"var client openai.Client",
			"var params responses.ResponseNewParams",
			"var transcript []responses.ResponseInputItemUnionParam",
		},
	},
	{
		name: "anthropicv2", module: "adapters/anthropicv2",
		keys: []string{"github.com/histrim/history/adapters/anthropicv2", "github.com/histrim/history/adapters/anthropicv2/beta"},
		packages: map[string]string{
			"anthropic": "github.com/anthropics/anthropic-sdk-go/v2",
		},
		names: []string{
			"var client anthropic.Client",
			"var params anthropic.MessageNewParams",
			"var betaParams anthropic.BetaMessageNewParams",
			"var transcript []anthropic.MessageParam",
		},
	},
	{
		name: "anthropic", module: "adapters/anthropic",
		keys: []string{"github.com/histrim/history/adapters/anthropic"},
		packages: map[string]string{
			"hanthropic": "github.com/histrim/history/adapters/anthropic",
			"anthropic":  "github.com/anthropics/anthropic-sdk-go",
		},
		names: []string{
			"var client anthropic.Client",
			"var params anthropic.MessageNewParams",
			"var transcript []anthropic.MessageParam",
		},
	},
	{
		name: "gemini", module: "adapters/gemini",
		keys: []string{"github.com/histrim/history/adapters/gemini"},
		packages: map[string]string{
			"gemini": "github.com/histrim/history/adapters/gemini",
			"genai":  "google.golang.org/genai",
		},
		names: []string{
			"var client *genai.Client",
			"var config *genai.GenerateContentConfig",
			"var contents []*genai.Content",
			"var model string // the model's name",
		},
	},
	{
		name: "langchaingo", module: "adapters/langchaingo",
		keys: []string{"github.com/histrim/history/adapters/langchaingo"},
		packages: map[string]string{
			"langchaingo":  "github.com/histrim/history/adapters/langchaingo",
			"hlangchaingo": "github.com/histrim/history/adapters/langchaingo",
			"llms":         "github.com/tmc/langchaingo/llms",
		},
		names: []string{
			"var llm llms.Model",
			"var msgs []llms.MessageContent",
			"var tools []llms.Tool",
		},
	},
	{
		name: "eino", module: "adapters/eino",
		keys: []string{"github.com/histrim/history/adapters/eino", "github.com/cloudwego/eino/compose"},
		packages: map[string]string{
			"eino":    "github.com/histrim/history/adapters/eino",
			"heino":   "github.com/histrim/history/adapters/eino",
			"compose": "github.com/cloudwego/eino/compose",
			"schema":  "github.com/cloudwego/eino/schema",
			"model":   "github.com/cloudwego/eino/components/model",
		},
		names: []string{
			"var chatModel model.ToolCallingChatModel",
			"var msgs []*schema.Message",
			"var tools []*schema.ToolInfo",
		},
	},
	{
		name: "goopenai", module: "adapters/goopenai",
		keys: []string{"github.com/histrim/history/adapters/goopenai"},
		packages: map[string]string{
			"goopenai": "github.com/histrim/history/adapters/goopenai",
			"openai":   "github.com/sashabaranov/go-openai",
		},
		names: []string{
			"var client *openai.Client",
			"var req openai.ChatCompletionRequest",
			"var msgs []openai.ChatCompletionMessage",
		},
	},
	{
		name: "adk", module: "frameworks/adk",
		keys: []string{"github.com/histrim/history/frameworks/adk", "google.golang.org/adk/session"},
		packages: map[string]string{
			"hadk":     "github.com/histrim/history/frameworks/adk",
			"session":  "google.golang.org/adk/session",
			"runner":   "google.golang.org/adk/runner",
			"plugin":   "google.golang.org/adk/plugin",
			"agent":    "google.golang.org/adk/agent",
			"llmagent": "google.golang.org/adk/agent/llmagent",
			"model":    "google.golang.org/adk/model",
		},
		names: []string{
			"var llm model.LLM",
			"var rootAgent agent.Agent",
		},
	},
	{
		name: "genkit", module: "frameworks/genkit",
		keys: []string{"github.com/histrim/history/frameworks/genkit"},
		packages: map[string]string{
			"hgenkit": "github.com/histrim/history/frameworks/genkit",
			"genkit":  "github.com/firebase/genkit/go/genkit",
			"ai":      "github.com/firebase/genkit/go/ai",
		},
		names: []string{
			"var g *genkit.Genkit",
			"var msgs []*ai.Message",
			"var tools []ai.ToolRef",
		},
	},
	{
		name: "fantasy", module: "frameworks/fantasy",
		keys: []string{"github.com/histrim/history/frameworks/fantasy"},
		packages: map[string]string{
			"hfantasy": "github.com/histrim/history/frameworks/fantasy",
			"fantasy":  "charm.land/fantasy",
		},
		names: []string{
			"var lm fantasy.LanguageModel",
			"var tools []fantasy.AgentTool",
		},
	},
	{
		name: "trpc", module: "frameworks/trpc",
		keys: []string{"github.com/histrim/history/frameworks/trpc"},
		packages: map[string]string{
			"htrpc":  "github.com/histrim/history/frameworks/trpc",
			"openai": "trpc.group/trpc-go/trpc-agent-go/model/openai",
		},
		names: []string{
			"var name string // the model's name",
		},
	},
	{
		name: "redis", module: "stores/redis",
		keys: []string{"github.com/histrim/history/stores/redis", "github.com/redis/go-redis/v9"},
		packages: map[string]string{
			"redisstore": "github.com/histrim/history/stores/redis",
			"redis":      "github.com/redis/go-redis/v9",
		},
		names: []string{
			"var addr string // the server's host:port",
			"var store *redisstore.Store",
		},
	},
	{
		name: "postgres", module: "stores/postgres",
		keys: []string{"github.com/histrim/history/stores/postgres", "github.com/jackc/pgx/v5/pgxpool"},
		packages: map[string]string{
			"pgstore": "github.com/histrim/history/stores/postgres",
			"pgxpool": "github.com/jackc/pgx/v5/pgxpool",
		},
		names: []string{
			"var dsn string // the database's connection string",
			"var store *pgstore.Store",
		},
	},
	{name: "core", module: "."},
}

// contextByName returns the context called name.
func contextByName(name string) (*context, bool) {
	for i := range contexts {
		if contexts[i].name == name {
			return &contexts[i], true
		}
	}
	return nil, false
}

// allPackages returns c's package names with the common ones.
func (c *context) allPackages() map[string]string {
	out := maps.Clone(common)
	maps.Copy(out, c.packages)
	return out
}

// allNames returns c's well-known names with the common ones, each with
// its declaration; a context's own declaration of a name wins.
func (c *context) allNames() map[string]string {
	out := map[string]string{}
	add := func(decls []string) {
		for _, d := range decls {
			_, rest, _ := strings.Cut(d, " ") // var or type
			name, _, _ := strings.Cut(rest, " ")
			out[name] = d
		}
	}
	add(commonNames)
	if c.name == "core" || c.name == "redis" || c.name == "postgres" {
		add(coreNames)
	}
	add(c.names)
	return out
}
