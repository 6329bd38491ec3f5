package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/skeinrun/skein/server"
)

// netFlags are the flags of `skein serve` about its listener and
// connections: who may reach it without a token, how long a connection
// may take, and how many it holds (docs/limits.md).
type netFlags struct {
	insecure   *bool
	allowHosts *string
	maxConns   *int
	readHeader *time.Duration
	request    *time.Duration
	upload     *time.Duration
	idle       *time.Duration
}

func addNetFlags(fs *flag.FlagSet) *netFlags {
	return &netFlags{
		insecure:   fs.Bool("insecure-no-token", false, "allow listening beyond loopback without --token: anyone who can reach the address can deploy and run code"),
		allowHosts: fs.String("allow-host", "", "comma-separated host names, besides loopback ones and the listen address, that requests may name in their Host header when there is no token"),
		maxConns:   fs.Int("max-connections", server.DefaultMaxConnections, "most connections served at once; more wait in the kernel's queue until one closes"),
		readHeader: fs.Duration("read-header-timeout", server.DefaultReadHeaderTimeout, "longest a client may take to send a request's headers"),
		request:    fs.Duration("request-timeout", server.DefaultRequestTimeout, "longest a client may take to send an API request's body, and the request to be answered"),
		upload:     fs.Duration("upload-timeout", server.DefaultUploadTimeout, "--request-timeout for a module upload (sent, checked and compiled)"),
		idle:       fs.Duration("idle-timeout", server.DefaultIdleTimeout, "longest a kept-alive connection may wait for its next request"),
	}
}

// check refuses values that would turn a limit off.
func (f *netFlags) check() error {
	if *f.maxConns < 1 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--max-connections %d: want at least 1", *f.maxConns)}
	}
	for name, d := range map[string]time.Duration{"read-header-timeout": *f.readHeader, "request-timeout": *f.request,
		"upload-timeout": *f.upload, "idle-timeout": *f.idle} {
		if d <= 0 {
			return &exitError{code: exitUsage, err: fmt.Errorf("--%s %v: want a positive duration", name, d)}
		}
	}
	return nil
}

// listen listens on addr, at most --max-connections at once. Without a
// token it refuses an address beyond loopback, before binding it, unless
// --insecure-no-token is given. It returns the hosts besides loopback
// ones that requests may name without a token (server.Options.AllowedHosts).
func (f *netFlags) listen(addr string, hasToken bool) (net.Listener, []string, error) {
	guarded := !hasToken && !*f.insecure
	if guarded {
		ta, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			return nil, nil, &exitError{code: exitUsage, err: fmt.Errorf("--addr %s: %w", addr, err)}
		}
		if !ta.IP.IsLoopback() {
			return nil, nil, openListenError(addr)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if guarded && (!ok || !tcp.IP.IsLoopback()) {
		_ = ln.Close() // refused before use: the refusal is the error
		return nil, nil, openListenError(addr)
	}
	var hosts []string
	for _, h := range strings.Split(*f.allowHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if ok {
		hosts = append(hosts, listenHosts(tcp.IP)...)
	}
	return server.LimitListener(ln, *f.maxConns), hosts, nil
}

func openListenError(addr string) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(
		"--addr %s is not a loopback address and there is no token: anyone who can reach it could deploy and run code; "+
			"set --token (or $SKEIN_TOKEN), listen on 127.0.0.1, or pass --insecure-no-token to accept that", addr)}
}

// listenHosts are the addresses a client may name to reach a server
// listening on ip: ip itself, or every address of this machine when ip is
// unspecified (0.0.0.0, ::).
func listenHosts(ip net.IP) []string {
	if !ip.IsUnspecified() {
		return []string{ip.String()}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var hosts []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			hosts = append(hosts, n.IP.String())
		}
	}
	return hosts
}

// httpServer is the HTTP server of `skein serve`: the route's own
// deadlines (server.Options) replace ReadTimeout and WriteTimeout, which
// bound what is answered before any handler (a 401, a 404).
func (f *netFlags) httpServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: *f.readHeader,
		ReadTimeout:       *f.request,
		WriteTimeout:      *f.request,
		IdleTimeout:       *f.idle,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// options sets the server options the flags hold.
func (f *netFlags) options(o *server.Options, allowed []string) {
	o.AllowedHosts = allowed
	o.RequestTimeout = *f.request
	o.UploadTimeout = *f.upload
}
