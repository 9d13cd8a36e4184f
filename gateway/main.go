package gateway

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// Main is the serve command of histrim and histrim-gateway: it reads the
// settings from the environment (through getenv) and then from args, the
// flags of [Config.RegisterFlags], and runs the gateway until ctx is done
// (a signal, in a program), logging to stderr. It returns the exit status:
// 0 after a graceful shutdown, 2 for bad flags or settings, 1 when the
// gateway cannot start or fails.
func Main(ctx context.Context, name string, args []string, getenv func(string) string, stderr io.Writer) int {
	var cfg Config
	if err := cfg.ApplyEnv(getenv); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [-addr ADDR] [-upstream URL] [-store URL] [-window N] [-max-body-bytes N] [-header-timeout D] [-upstream-timeout D] [-idle-timeout D] [-shutdown-timeout D]\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", name, fs.Args())
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if err := Run(ctx, cfg, log); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		var ce *ConfigError
		if errors.As(err, &ce) || errors.Is(err, ErrUnknownStore) {
			return 2
		}
		return 1
	}
	return 0
}
