// Command taskworker serves test activities to a skein server over the
// worker protocol (package worker), and prints one line per attempt it
// starts, "START name run key attempt", and per attempt it ends,
// "END name run key attempt", so that tests count executions from
// outside the process.
//
// Activities: "echo" returns its input; "slow" returns its input after
// --delay (or when its context ends); "fail" always fails (retryable);
// "refuse" fails with a non-retryable error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/worker"
)

var outMu sync.Mutex

func line(what string, ctx context.Context) {
	i, _ := activity.InfoFrom(ctx)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf("%s %s %s %s %d\n", what, i.Name, i.RunID, i.Key, i.Attempt)
}

func main() {
	server := flag.String("server", "", "the skein server's URL")
	token := flag.String("token", "", "the server's API token")
	id := flag.String("id", "", "this worker's identity")
	concurrency := flag.Int("concurrency", 8, "tasks run at once")
	delay := flag.Duration("delay", time.Second, "how long slow takes")
	flag.Parse()
	w, err := worker.New(worker.Options{Server: *server, Token: *token, Identity: *id, Concurrency: *concurrency})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	wrap := func(fn activity.Func) activity.Func {
		return func(ctx context.Context, in []byte) ([]byte, error) {
			line("START", ctx)
			out, err := fn(ctx, in)
			line("END", ctx)
			return out, err
		}
	}
	w.Register("echo", wrap(func(_ context.Context, in []byte) ([]byte, error) { return in, nil }))
	w.Register("slow", wrap(func(ctx context.Context, in []byte) ([]byte, error) {
		t := time.NewTimer(*delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return in, nil
		}
	}))
	w.Register("fail", wrap(func(context.Context, []byte) ([]byte, error) {
		return nil, errors.New("fail: it always fails")
	}))
	w.Register("refuse", wrap(func(context.Context, []byte) ([]byte, error) {
		return nil, activity.NonRetryable(errors.New("refuse: not retried"))
	}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
