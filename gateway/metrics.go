package gateway

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/histrim/history/models"
	"github.com/histrim/history/wire"
)

// A metric the gateway exports: its name, help and whether it is labelled
// by API.
type metricDef struct {
	name, help string
	byAPI      bool
}

// The gateway's metrics, in the order /metrics writes them.
var (
	mRequests      = metricDef{"histrim_gateway_requests_total", "Requests answered, by API and HTTP status (499: the client went away).", true}
	mTrims         = metricDef{"histrim_gateway_trims_total", "Requests the trimming transport trimmed before sending, by API.", true}
	mTokensBefore  = metricDef{"histrim_gateway_tokens_before_total", "Tokens of the requests' messages as the clients sent them (where the trim counted them), by API.", true}
	mTokensAfter   = metricDef{"histrim_gateway_tokens_after_total", "Tokens of the requests' messages as sent upstream, by API.", true}
	mRecovered     = metricDef{"histrim_gateway_overflows_recovered_total", "Context-window overflows answered by the upstream and recovered by a smaller retry, by API.", true}
	mRewrites      = metricDef{"histrim_gateway_prefix_rewrites_total", "Trims that changed what is dropped or elided, rewriting the prompt-cache prefix of the conversation's previous request.", false}
	mStoreErrors   = metricDef{"histrim_gateway_store_errors_total", "State store failures (the trim went on with this replica's state).", false}
	mTruncations   = metricDef{"histrim_gateway_silent_truncations_total", "Answers whose reported prompt was far below what was sent (the upstream cut it silently), by API.", true}
	mUnknownModels = metricDef{"histrim_gateway_unknown_models_total", "Requests forwarded untrimmed because their model's window is not known, by API.", true}
	mHoldsExpired  = metricDef{"histrim_gateway_stream_holds_expired_total", "Streams whose opening events were held back for a refusal and passed on at the hold's time bound, the upstream silent until then (a refusal after it reaches the client as sent), by API.", true}
	allMetrics     = []metricDef{mRequests, mTrims, mTokensBefore, mTokensAfter, mRecovered, mRewrites, mStoreErrors, mTruncations, mUnknownModels, mHoldsExpired}
)

// metrics holds the gateway's counters; safe for concurrent use.
type metrics struct {
	mu sync.Mutex
	// v maps a metric's name and labels (`api="chat",code="200"`, or
	// "") to its value.
	v map[string]map[string]uint64
}

func newMetrics() *metrics { return &metrics{v: map[string]map[string]uint64{}} }

// add adds n to metric m for api ("" for a metric without labels) and any
// further labels, written `name="value"`.
func (m *metrics) add(d metricDef, api string, n uint64, extra ...string) {
	labels := ""
	if d.byAPI {
		labels = `api="` + api + `"`
	}
	for _, e := range extra {
		labels += "," + e
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	series := m.v[d.name]
	if series == nil {
		series = map[string]uint64{}
		m.v[d.name] = series
	}
	v := series[labels]
	if v+n < v {
		series[labels] = ^uint64(0) // saturate
		return
	}
	series[labels] = v + n
}

// request counts one request answered with status.
func (m *metrics) request(api string, status int) {
	m.add(mRequests, api, 1, `code="`+strconv.Itoa(status)+`"`)
}

// write writes every metric in the Prometheus text format (0.0.4): the
// counters by API are written for every API, zero until counted.
func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, d := range allMetrics {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", d.name, d.help, d.name)
		series := m.v[d.name]
		keys := make([]string, 0, len(series)+len(apis))
		for k := range series {
			keys = append(keys, k)
		}
		if d != mRequests {
			if d.byAPI {
				for _, a := range apis {
					if k := `api="` + a + `"`; series[k] == 0 {
						keys = append(keys, k)
					}
				}
			} else if len(series) == 0 {
				keys = append(keys, "")
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if k == "" {
				fmt.Fprintf(&b, "%s %d\n", d.name, series[k])
			} else {
				fmt.Fprintf(&b, "%s{%s} %d\n", d.name, k, series[k])
			}
		}
	}
	_, _ = io.WriteString(w, b.String())
}

// total returns the sum of metric d's series.
func (m *metrics) total(d metricDef) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n uint64
	for _, v := range m.v[d.name] {
		n += v
	}
	return n
}

// apiLabel is the metrics' label of a wire API.
func apiLabel(a wire.API) string {
	switch name := a.String(); {
	case a == wire.ChatCompletions:
		return apiChat
	case strings.Contains(name, "response"):
		return apiResponses
	case strings.Contains(name, "message"), strings.Contains(name, "anthropic"):
		return apiMessages
	case strings.Contains(name, "gemini"):
		return apiGemini
	}
	return apiOther
}

// event counts what the trimming transport reports of a request or a
// response.
func (m *metrics) event(ev wire.Event) {
	api := apiLabel(ev.API)
	if ev.Kind == wire.EventTruncation || ev.Truncated {
		m.add(mTruncations, api, 1)
		return
	}
	if ev.Forwarded {
		if errors.Is(ev.Err, models.ErrUnknownModel) {
			m.add(mUnknownModels, api, 1)
		}
		return
	}
	if ev.Trimmed {
		m.add(mTrims, api, 1)
	}
	if ev.TokensBefore >= 0 {
		m.add(mTokensBefore, api, uint64(ev.TokensBefore))
	}
	if ev.TokensAfter > 0 {
		m.add(mTokensAfter, api, uint64(ev.TokensAfter))
	}
	if ev.Recovered > 0 {
		m.add(mRecovered, api, uint64(ev.Recovered))
	}
	if ev.HoldExpired {
		m.add(mHoldsExpired, api, 1)
	}
}
