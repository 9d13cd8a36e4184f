package eino

import (
	"context"
	"errors"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// doorSender binds the tools to Eino's OpenAI model and sends through the
// door: Fit names the model (and passes the tools as the call's option,
// which the door counts), RecoverOverflow on the same transcript (attempts
// 1 and 2), Observe of each reply's usage.
func doorSender(name string) makeSender {
	return func(t *testing.T, l *adaptertest.Loop, cm model.ToolCallingChatModel, tools []*schema.ToolInfo, _ *history.Calibration, st *loopStats) sendFunc {
		cm, err := cm.WithTools(tools)
		if err != nil {
			t.Fatal(err)
		}
		tr := NewTrimmer()
		return func(ctx context.Context, full []*schema.Message) (*schema.Message, error) {
			send, res, err := tr.Fit(ctx, name, full, model.WithTools(tools))
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				return nil, err
			}
			for attempt := 1; ; attempt++ {
				out, err := cm.Generate(ctx, send)
				if err == nil {
					if out.ResponseMeta == nil || tr.Observe(out.ResponseMeta.Usage) == history.VerdictInvalid {
						t.Errorf("the reply's usage was not observed: %+v", out.ResponseMeta)
					}
					st.accept(l, promptTokens(out), res.Trimmed || attempt > 1, 0, false)
					return out, nil
				}
				if attempt > MaxRetries || !history.IsContextOverflow(err) {
					return nil, err
				}
				if send, res, err = tr.RecoverOverflow(full, err, attempt); err != nil {
					return nil, err
				}
			}
		}
	}
}

// TestDoor runs the loop through the door with Eino's OpenAI model: the
// Trimmer takes the window from the model's name (gpt-3.5-turbo's
// 16,385), the tools from the call's options, and learns the provider's
// count from each reply's usage.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "eino", "gpt-3.5-turbo", func(t *testing.T, l *adaptertest.Loop, name string) {
		runLoop(t, l, doorSender(name))
	})
}
