// Command torturehost is `skein serve` cut down for the crash-torture
// test (cmd/skein/torture_test.go), plus one host activity with an
// effect outside the process: "append" appends "RUN I GEN" to a log file
// each time it executes, so the test can count executions across crashes.
//
//	torturehost --db FILE --log FILE --gen N [--cache-dir DIR]
//
// It prints "listening on URL" and serves the HTTP API and a worker pool
// until it is killed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/server"
	"github.com/skeinrun/skein/store/sqlite"
)

func main() {
	db := flag.String("db", "skein.db", "SQLite database")
	logPath := flag.String("log", "effects.log", "file the append activity appends to")
	gen := flag.Int("gen", 0, "this process's generation number, written with each effect")
	cacheDir := flag.String("cache-dir", "", "compiled module cache")
	flag.Parse()
	if err := serve(*db, *logPath, *gen, *cacheDir); err != nil {
		fmt.Fprintln(os.Stderr, "torturehost:", err)
		os.Exit(1)
	}
}

func serve(db, logPath string, gen int, cacheDir string) error {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := sqlite.Open(ctx, db, sqlite.Options{Logger: log})
	if err != nil {
		return err
	}
	h, err := host.New(ctx, host.Config{Store: st, CacheDir: cacheDir, Logger: log})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	h.RegisterActivity("append", func(ctx context.Context, input []byte) ([]byte, error) {
		var in struct {
			ID string `json:"id"`
			I  int    `json:"i"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		mu.Lock()
		_, err := fmt.Fprintf(f, "%s %d %d\n", in.ID, in.I, gen) // one write(2) each: O_APPEND keeps lines whole
		mu.Unlock()
		if err != nil {
			return nil, err
		}
		select { // the effect is in flight for a while
		case <-time.After(time.Duration(20+in.I%4*30) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.Marshal(in.I*in.I + len(in.ID))
	})
	// Compile the stored modules before taking work: otherwise the first
	// drive of every run compiles the module at once, which takes longer
	// than the test lets a process live.
	ms, err := st.Modules(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		full, err := st.Module(ctx, m.Hash)
		if err != nil {
			return err
		}
		if _, err := h.Deploy(ctx, full.Name, full.Bytes); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	// A killed generation's runs are claimed again a second after their
	// last lease renewal.
	go func() {
		if err := h.Work(ctx, host.WorkOptions{Concurrency: 64, Poll: 50 * time.Millisecond, LeaseTTL: time.Second}); err != nil {
			log.Error("torturehost: the worker stopped", "err", err)
		}
	}()
	return http.Serve(ln, server.New(h, server.Options{Logger: log}))
}
