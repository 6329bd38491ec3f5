package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/limitflags"
	"github.com/skeinrun/skein/server"
)

// shutdownTimeout bounds how long `skein serve` waits for HTTP requests
// in progress when it is told to stop.
const shutdownTimeout = 10 * time.Second

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	f := addServeFlags(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	policy, err := host.ParseEvict(*f.dbf.evict)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	log, err := newServeLogger(stderr, *f.logFormat, *f.logLevel)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := f.nf.check(); err != nil {
		return err
	}
	// Listen first: an address refused without a token is refused before
	// anything is opened.
	ln, allowed, err := f.nf.listen(*f.addr, *f.token != "")
	if err != nil {
		return err
	}
	defer func() { _ = ln.Close() }() // for the returns before Serve, which closes it (again: no error worth telling)

	bg := context.WithoutCancel(ctx)
	st, where, err := f.dbf.openStore(bg, log)
	if err != nil {
		return err
	}
	cfg := host.Config{Store: st, Evict: policy, CacheDir: *f.cacheDir, Logger: log, MaxModuleBytes: int(*f.maxModule), LimitHint: limitflags.Flag,
		RemoteActivities: true, TaskLeaseTTL: *f.taskLease, Engine: *f.dbf.engine}
	if log.Enabled(bg, slog.LevelDebug) {
		cfg.GuestOutputFor = loggedOutput(log)
	}
	f.limits.apply(&cfg)
	f.ret.apply(&cfg)
	// A module's HTTP requests never reach this server's own API.
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		ap := tcp.AddrPort()
		cfg.APIAddrs, cfg.APIName = []netip.AddrPort{netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())}, "skein serve"
	}
	if *f.hookSecrets != "" {
		hs, err := loadHookSecrets(*f.hookSecrets, log)
		if err != nil {
			_ = st.Close() // the secrets' error is the one to return
			return err
		}
		cfg.HookSecrets = hs.lookup
		defer hs.watch(ctx)()
	}
	tp, stopTracing, err := startTracing(bg, *f.otlpEndpoint, log) // tracing.go
	if err != nil {
		_ = st.Close() // the tracing's error is the one to return
		return err
	}
	defer stopTracing()
	if tp != nil {
		cfg.TracerProvider = tp
	}
	h, err := host.New(bg, cfg)
	if err != nil {
		_ = st.Close() // the host's error is the one to return
		return err
	}
	announce(stdout, log, ln.Addr(), where, *f.token != "")
	so := server.Options{Token: *f.token, MaxModuleBytes: *f.maxModule, Logger: log, MaxClaimWait: *f.maxClaimWait, MaxHookBodyBytes: *f.maxHookBody}
	f.nf.options(&so, allowed)
	wo := host.WorkOptions{Concurrency: *f.concurrency, Poll: *f.poll, Grace: *f.grace, Owner: *f.workerID, LeaseTTL: *f.leaseTTL, MaxRetryBackoff: *f.retryMax}
	failure := serveUntilStopped(ctx, log, h, ln, so, wo, f.nf)
	return closeServe(bg, log, h, st, failure)
}

// announce says where the server listens: on stdout (the line tests and
// scripts read) and in the log, with a warning when it listens beyond
// this machine without a token.
func announce(stdout io.Writer, log *slog.Logger, addr net.Addr, where string, auth bool) {
	url := "http://" + addr.String()
	fmt.Fprintf(stdout, "skein serve: listening on %s\n", url)
	log.Info("skein serve: listening", "addr", url, "db", where, "auth", auth)
	if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && !auth {
		log.Warn("skein serve: listening beyond this machine without --token (--insecure-no-token): anyone who can reach it can deploy and run code")
	}
}

// closeServe closes the host and the store of a server that stopped with
// failure (nil: a clean stop) and returns failure, or else the first
// error of closing.
func closeServe(ctx context.Context, log *slog.Logger, h *host.Host, st io.Closer, failure error) error {
	herr := h.Close(ctx)
	if err := st.Close(); err != nil {
		herr = fmt.Errorf("closing the database: %w", err)
	}
	if herr != nil {
		log.Error("skein serve: close", "err", herr)
		if failure == nil {
			failure = herr
		}
	}
	log.Info("skein serve: stopped")
	return failure
}

// serveFlags are the flags of `skein serve`.
type serveFlags struct {
	dbf                                        *dbFlags
	limits                                     *limitFlags
	ret                                        *retentionFlags
	nf                                         *netFlags
	addr, token, cacheDir, workerID            *string
	hookSecrets, otlpEndpoint                  *string
	logFormat, logLevel                        *string
	maxModule, maxHookBody                     *int64
	concurrency                                *int
	grace, poll, leaseTTL, retryMax, taskLease *time.Duration
	maxClaimWait                               *time.Duration
}

// addServeFlags defines the flags of `skein serve` on fs.
func addServeFlags(fs *flag.FlagSet) *serveFlags {
	return &serveFlags{
		dbf:          addDBFlags(fs, true, false),
		addr:         fs.String("addr", "127.0.0.1:7070", "address to listen on (host:port; port 0 picks a free one)"),
		token:        fs.String("token", "", "require 'Authorization: Bearer TOKEN' on every request (default $SKEIN_TOKEN)"),
		cacheDir:     fs.String("cache-dir", "", "keep compiled modules in this folder across restarts"),
		maxModule:    fs.Int64("max-module-bytes", server.DefaultMaxModuleBytes, "largest module upload accepted"),
		maxHookBody:  fs.Int64("max-hook-body-bytes", server.DefaultMaxHookBodyBytes, "largest webhook delivery body accepted (POST /v1/hooks/NAME); larger ones get 413"),
		hookSecrets:  fs.String("hook-secrets", "", "file of the named secrets webhooks are signed with (hook create --secret NAME): NAME=VALUE lines or a JSON object; read again on SIGHUP"),
		otlpEndpoint: fs.String("otlp-endpoint", "", "export traces over OTLP/HTTP to this collector URL, e.g. http://localhost:4318 (or set OTEL_EXPORTER_OTLP_ENDPOINT); default: no traces"),
		limits:       addLimitFlags(fs, false),
		ret:          addRetentionFlags(fs),
		concurrency:  fs.Int("concurrency", 0, "most runs executed at once (default 8*GOMAXPROCS)"),
		grace:        fs.Duration("grace", 10*time.Second, "on shutdown, how long running executions may go on before they are interrupted (they resume on the next start)"),
		poll:         fs.Duration("poll", 0, "how often the database is asked for due runs (default 250ms)"),
		workerID:     fs.String("worker-id", "", "this worker's name in run leases; workers sharing a database need different ones (default {hostname}-{pid}-{random})"),
		leaseTTL:     fs.Duration("lease-ttl", host.DefaultLeaseTTL, "how long a worker's lease on a run lasts unless renewed; a dead worker's runs are taken over this long after its last renewal"),
		retryMax:     fs.Duration("max-retry-backoff", host.DefaultMaxRetryBackoff, "longest wait before a run whose drive failed (its commits failed: a full or damaged database) is driven again; the wait starts at 1s and doubles with each failure in a row"),
		taskLease:    fs.Duration("task-lease", host.DefaultTaskLeaseTTL, "how long a remote worker holds an activity task without a heartbeat; an attempt whose lease ends is failed as timed out and retried by its policy"),
		maxClaimWait: fs.Duration("max-claim-wait", server.DefaultMaxClaimWait, "longest a worker's claim of activity tasks waits for one (a long poll)"),
		logFormat:    fs.String("log-format", "text", "log lines as text (key=value) or json, on stderr"),
		logLevel:     fs.String("log-level", "info", "least level logged: debug, info, warn or error"),
		nf:           addNetFlags(fs),
	}
}

// check refuses flag values that cannot work, naming the flag; it
// fills the token from $SKEIN_TOKEN when the flag is not given.
func (f *serveFlags) check() error {
	if *f.token == "" {
		*f.token = os.Getenv("SKEIN_TOKEN")
	}
	if *f.maxHookBody <= 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--max-hook-body-bytes %d: want a positive number of bytes", *f.maxHookBody)}
	}
	if *f.taskLease < 10*time.Millisecond {
		return &exitError{code: exitUsage, err: fmt.Errorf("--task-lease %s: a task's lease must last at least 10ms", *f.taskLease)}
	}
	if *f.leaseTTL < 10*time.Millisecond {
		return &exitError{code: exitUsage, err: fmt.Errorf("--lease-ttl %s: a lease must last at least 10ms", *f.leaseTTL)}
	}
	if err := f.ret.check(); err != nil {
		return err
	}
	return checkEngine(*f.dbf.engine)
}

// serveUntilStopped serves the API on ln and runs the worker pool until
// ctx ends or either fails, then stops both: requests in progress get
// shutdownTimeout, executions in progress the grace period. It returns
// what failed, if anything.
func serveUntilStopped(ctx context.Context, log *slog.Logger, h *host.Host, ln net.Listener, so server.Options, wo host.WorkOptions, nf *netFlags) error {
	bg := context.WithoutCancel(ctx)
	workCtx, stopWork := context.WithCancel(bg)
	defer stopWork()
	so.Stop = workCtx
	srv := nf.httpServer(server.New(h, so), log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	worked := make(chan error, 1)
	go func() { worked <- h.Work(workCtx, wo) }()

	var failure error
	select {
	case <-ctx.Done():
		log.Info("skein serve: shutting down", "reason", context.Cause(ctx))
	case err := <-served:
		failure = fmt.Errorf("http server: %w", err)
	case err := <-worked:
		if err == nil {
			err = errors.New("it returned early")
		}
		failure = fmt.Errorf("worker pool: %w", err)
		worked <- nil // for the wait below
	}
	if failure != nil {
		log.Error("skein serve: stopping", "err", failure)
	}
	stopWork()
	shCtx, cancel := context.WithTimeout(bg, shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shCtx); err != nil {
		log.Warn("skein serve: requests still in progress were cut", "err", err)
		_ = srv.Close() // cuts what Shutdown left: its error is only that of closing the listeners
	}
	select {
	case err := <-worked:
		if err != nil && failure == nil {
			failure = fmt.Errorf("worker pool: %w", err)
		}
	case <-time.After(wo.Grace + shutdownTimeout):
		log.Warn("skein serve: the worker pool did not stop in time")
	}
	return failure
}

// newServeLogger is the logger of `skein serve`: text or JSON lines on w,
// from level up. Lines about a run carry its id as "run" (and the op's
// key as "key" where there is one).
func newServeLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
