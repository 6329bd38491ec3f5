package main

import (
	"flag"
	"strings"
	"time"

	"github.com/skeinrun/skein/host"
)

// httpFlags are the egress policy of the built-in HTTP activity of `skein
// run` and `skein serve` (host.Config; docs/activities.md).
type httpFlags struct {
	allow       []string
	timeout     *time.Duration
	maxResponse *int64
	perRun, all *int
}

func addHTTPFlags(fs *flag.FlagSet) *httpFlags {
	f := &httpFlags{}
	fs.Func("allow-http", "hosts the built-in HTTP activity (skein.HTTP) may reach: HOST or HOST:PORT, comma-separated; repeatable. Default: none, every request is denied", func(s string) error {
		for _, a := range strings.Split(s, ",") {
			if a = strings.TrimSpace(a); a != "" {
				f.allow = append(f.allow, a)
			}
		}
		return nil
	})
	f.timeout = fs.Duration("http-timeout", host.DefaultHTTPTimeout, "longest one request of the HTTP activity may take, redirects and body included")
	f.maxResponse = fs.Int64("http-max-response", host.DefaultHTTPMaxResponseBytes, "largest response of the HTTP activity, headers (names and values) and body together, in bytes")
	f.perRun = fs.Int("http-max-concurrent-per-run", host.DefaultHTTPMaxConcurrentPerRun, "most requests of the HTTP activity in progress for one run; more wait")
	f.all = fs.Int("http-max-concurrent", host.DefaultHTTPMaxConcurrent, "most requests of the HTTP activity in progress in the process; more wait")
	return f
}

// testResolver resolves the HTTP activity's names in a binary built with
// -tags skeintest (testresolver.go); nil, the system's resolver, otherwise.
var testResolver host.HTTPResolver

// apply sets the HTTP activity's policy in cfg.
func (f *httpFlags) apply(cfg *host.Config) {
	cfg.HTTPResolver = testResolver
	cfg.HTTPAllow = f.allow
	cfg.HTTPTimeout = *f.timeout
	cfg.HTTPMaxResponseBytes = *f.maxResponse
	cfg.HTTPMaxConcurrentPerRun = *f.perRun
	cfg.HTTPMaxConcurrent = *f.all
}
