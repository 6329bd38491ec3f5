package host

import (
	"context"
	"fmt"
)

// What the host owns and Close stops: child drives, compilations,
// activity calls and asynchronous commits.

// childDriveContext returns the context of a child run's drive: base,
// also ended by Close, and done, to call when the drive returned. ok is
// false once the host is closed.
func (h *Host) childDriveContext(base context.Context) (ctx context.Context, done func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, false
	}
	h.childDrives.Add(1)
	ctx, cancel := context.WithCancel(base)
	stop := context.AfterFunc(h.closing, cancel)
	return ctx, func() { stop(); cancel(); h.childDrives.Done() }, true
}

// Close releases the runtime and compiled modules, after interrupting the
// drives of child runs it started for their parents (they stay durable,
// like runs interrupted by a shutdown) and cancelling the activity calls
// in flight. It waits for every goroutine the host started, while ctx
// lasts: an activity that ignores its context makes Close return ctx's
// error. It does not close the store; end the drives first (the
// contexts of Work and Drive).
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	again := h.closed
	h.closed = true
	h.mu.Unlock()
	if again {
		return nil
	}
	h.stopChilds()
	h.childDrives.Wait()
	h.modules.Wait() // compilations told to stop end after the functions in progress
	err := h.stopOwned(ctx)
	h.http.Close()
	h.modules.CloseAll()
	if cerr := h.eng.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// spawn runs f on a goroutine the host owns (an activity call, an
// asynchronous commit): Close stops and waits for it. After Close it
// runs f on the caller's goroutine instead.
func (h *Host) spawn(f func()) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		f()
		return
	}
	h.owned.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.owned.Done()
		f()
	}()
}

// stopOwned cancels the activity calls of the runs in this process and
// waits for the goroutines the host owns, while ctx lasts: an activity
// that ignores its context is left behind, and Close says so.
func (h *Host) stopOwned(ctx context.Context) error {
	h.mu.Lock()
	for _, rs := range h.active {
		rs.Cancel()
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.owned.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("host: close: goroutines of activity calls or commits still running (an activity that ignores its context?): %w", ctx.Err())
	}
}
