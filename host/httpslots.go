package host

import (
	"context"
	"fmt"
	"sync"
)

// httpSlots bound the HTTP activity's requests in progress:
// Config.HTTPMaxConcurrentPerRun for each run, Config.HTTPMaxConcurrent in
// all. A request waits for its run's slot first, so a run with many
// requests queued holds at most its own bound of the process's slots.
type httpSlots struct {
	all    chan struct{}
	perRun int
	hint   func(string) string // Config.limitHint

	mu   sync.Mutex
	runs map[string]*runHTTPSlots // by run id, while the run has requests
}

// runHTTPSlots are one run's slots and how many requests hold or wait
// for them.
type runHTTPSlots struct {
	ch    chan struct{}
	users int
}

func newHTTPSlots(cfg *Config) httpSlots {
	return httpSlots{all: make(chan struct{}, cfg.HTTPMaxConcurrent), perRun: cfg.HTTPMaxConcurrentPerRun,
		hint: cfg.limitHint, runs: map[string]*runHTTPSlots{}}
}

// acquire waits for a slot of run and one of the process, while ctx
// lasts, and returns the func that gives them back. A wait that ctx ends
// fails, naming the bound and wrapping ctx's cause.
func (s *httpSlots) acquire(ctx context.Context, run string) (func(), error) {
	s.mu.Lock()
	r := s.runs[run]
	if r == nil {
		r = &runHTTPSlots{ch: make(chan struct{}, s.perRun)}
		s.runs[run] = r
	}
	r.users++
	s.mu.Unlock()
	leave := func() {
		s.mu.Lock()
		if r.users--; r.users == 0 {
			delete(s.runs, run)
		}
		s.mu.Unlock()
	}
	select {
	case r.ch <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, s.waitError("for the run", "HTTPMaxConcurrentPerRun", cap(r.ch), ctx)
	}
	select {
	case s.all <- struct{}{}:
	case <-ctx.Done():
		<-r.ch
		leave()
		return nil, s.waitError("in this process", "HTTPMaxConcurrent", cap(s.all), ctx)
	}
	return func() {
		<-s.all
		<-r.ch
		leave()
	}, nil
}

func (s *httpSlots) waitError(scope, field string, n int, ctx context.Context) error {
	return fmt.Errorf("activity %q: waiting for a request slot %s (Config.%s = %d%s): %w", HTTPActivity, scope, field, n, hintSuffix(s.hint(field)), context.Cause(ctx))
}
