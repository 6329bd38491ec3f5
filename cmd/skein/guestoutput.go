package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/skeinrun/skein/internal/lines"
)

const guestOutputUsage = "pass the module's stdout and stderr through to stderr, each line prefixed with [RUN-ID] (on every execution, replays included)"

// prefixedOutput returns a host.Config.GuestOutputFor that writes each
// line of a guest's output to w as "[RUN] line" ("[deploy]" while a
// module is described). Lines of concurrent executions do not mix.
func prefixedOutput(w io.Writer) func(run string) io.Writer {
	var mu sync.Mutex
	return func(run string) io.Writer {
		if run == "" {
			run = "deploy"
		}
		return lines.New(func(line string) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(w, "[%s] %s\n", run, line)
		})
	}
}

// loggedOutput returns a host.Config.GuestOutputFor that logs each line
// of a guest's output at debug level, with the run's id.
func loggedOutput(log *slog.Logger) func(run string) io.Writer {
	return func(run string) io.Writer {
		return lines.New(func(line string) {
			log.LogAttrs(context.Background(), slog.LevelDebug, "guest output", slog.String("run", run), slog.String("line", line))
		})
	}
}
