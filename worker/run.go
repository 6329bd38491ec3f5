package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/client"
)

// reportTimeout bounds reporting an attempt's end, also after Run's
// context ended.
const reportTimeout = 10 * time.Second

// Run claims and runs tasks until ctx ends. Then it cancels the contexts
// of the activities still running, reports each attempt's end (an
// activity that returns ctx's error reports ErrStopping, and the server
// queues its next attempt at once) and returns nil once all have ended.
// It returns an error at once when the server refuses the worker (a wrong
// token: 401; a key not allowed the claim: 403) or no activity is
// registered.
func (w *Worker) Run(ctx context.Context) error {
	names := w.names()
	if len(names) == 0 {
		return errors.New("worker: no activity is registered")
	}
	w.log.Info("worker: started", "server", w.o.Server, "identity", w.o.Identity, "activities", names,
		"concurrency", w.o.Concurrency, "stream", !w.o.JSONCalls)
	if !w.o.JSONCalls {
		err := w.runStream(ctx, names)
		if !errors.Is(err, errNoStream) {
			return err
		}
		w.log.Info("worker: the server has no worker stream; claiming tasks with the JSON calls", "pollers", w.o.Pollers)
	}
	var tasks sync.WaitGroup
	defer tasks.Wait()
	tctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	pctx, refused := context.WithCancelCause(ctx)
	defer refused(nil)
	sl := newSlots(w.o.Concurrency)
	// Each poller claims up to its share of the slots, so that all of
	// them can wait on the server at once.
	share := min((w.o.Concurrency+w.o.Pollers-1)/w.o.Pollers, maxClaim)
	var pollers sync.WaitGroup
	for range w.o.Pollers {
		pollers.Add(1)
		go func() {
			defer pollers.Done()
			if err := w.poll(pctx, ctx, tctx, names, sl, share, &tasks); err != nil {
				refused(err)
			}
		}()
	}
	pollers.Wait()
	stop()
	if err := context.Cause(pctx); ctx.Err() == nil && err != nil {
		return err
	}
	return nil
}

// poll claims tasks for the free slots and starts them, until pctx ends.
// It returns an error when the server refuses the worker.
func (w *Worker) poll(pctx, runCtx, tctx context.Context, names []string, sl *slots, share int, tasks *sync.WaitGroup) error {
	backoff := time.Duration(0)
	for {
		n := sl.take(pctx, share)
		if n == 0 {
			return nil // pctx ended
		}
		claimed, err := w.c.ClaimTasks(pctx, client.ClaimRequest{Worker: w.o.Identity, Names: names, Max: n,
			WaitMS: w.o.Wait.Milliseconds()})
		sl.give(n - len(claimed))
		if err != nil {
			if pctx.Err() != nil {
				return nil
			}
			var se *client.Error
			if errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden || se.Status == http.StatusBadRequest) {
				return fmt.Errorf("worker: the server refused the claim: %w", err)
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			w.log.Warn("worker: claim failed; trying again", "err", err, "in", backoff)
			sleep(pctx, backoff)
			continue
		}
		backoff = 0
		for _, t := range claimed {
			tasks.Add(1)
			go func() {
				defer func() { sl.give(1); tasks.Done() }()
				w.runTask(tctx, runCtx, t)
			}()
		}
	}
}

// maxClaim is the most tasks one claim asks for (the server's cap).
const maxClaim = 256

// slots counts the tasks the worker may still start.
type slots struct {
	mu   sync.Mutex
	free int
	more chan struct{} // closed (and replaced) when slots are given back
}

func newSlots(n int) *slots { return &slots{free: n, more: make(chan struct{})} }

// take waits until a slot is free and takes up to max of them; 0 when ctx
// ends first.
func (s *slots) take(ctx context.Context, max int) int {
	for {
		s.mu.Lock()
		if s.free > 0 {
			n := min(s.free, max)
			s.free -= n
			s.mu.Unlock()
			return n
		}
		more := s.more
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return 0
		case <-more:
		}
	}
}

// give returns n slots.
func (s *slots) give(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.free += n
	close(s.more)
	s.more = make(chan struct{})
	s.mu.Unlock()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// runTask runs one attempt under heartbeats and reports its end. tctx
// ends when the worker stops; runCtx is Run's context.
func (w *Worker) runTask(tctx, runCtx context.Context, t client.ClaimedTask) {
	ref := t.Ref(w.o.Identity)
	info := activity.Info{RunID: t.RunID, Key: t.Key, Name: t.Name, Attempt: t.Attempt, IdempotencyKey: t.IdempotencyKey,
		Traceparent: t.Traceparent}
	actx, cancel := context.WithCancelCause(activity.WithInfo(tctx, info))
	defer cancel(nil)
	if t.TimeoutMS > 0 {
		var c context.CancelFunc
		actx, c = context.WithTimeout(actx, time.Duration(t.TimeoutMS)*time.Millisecond)
		defer c()
	}
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		w.heartbeat(actx, ref, t.HeartbeatMS, cancel)
	}()
	out, err := call(actx, w.fn(t.Name), t.Input)
	cancel(nil)
	<-hbDone
	if cause := context.Cause(actx); errors.Is(cause, errLost) {
		w.log.Warn("worker: attempt abandoned", "run", t.RunID, "key", t.Key, "attempt", t.Attempt, "why", cause)
		return
	}
	if err != nil && runCtx.Err() != nil && errors.Is(err, context.Canceled) {
		err = ErrStopping
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(runCtx), reportTimeout)
	defer rcancel()
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	failed, fail := err != nil, client.FailRequest{TaskRef: ref}
	if failed {
		var nr *activity.NonRetryableError
		fail.Error, fail.NonRetryable = err.Error(), errors.As(err, &nr)
	}
	end := func(ctx context.Context) (err error) {
		if failed {
			_, err = w.c.FailTask(ctx, fail)
		} else {
			_, err = w.c.CompleteTask(ctx, client.CompleteRequest{TaskRef: ref, Result: out})
		}
		return err
	}
	if err := w.report(rctx, end); err != nil {
		w.log.Warn("worker: report the attempt's end", "run", t.RunID, "key", t.Key, "attempt", t.Attempt, "err", err)
	}
}

// report sends an attempt's end with send, again after a failure to
// reach the server or a 5xx answer (the server restarting), until ctx
// ends. Any other answer is final: a 409 says the attempt is no longer
// ours.
func (w *Worker) report(ctx context.Context, send func(context.Context) error) error {
	wait := 50 * time.Millisecond
	for {
		err := send(ctx)
		var se *client.Error
		if err == nil || (errors.As(err, &se) && se.Status < 500) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// errLost is the cause of an attempt's cancellation when the server says
// it is no longer this worker's: its lease expired and the attempt was
// ended, the task was canceled, or its run ended.
var errLost = errors.New("the attempt is no longer this worker's")

// heartbeat keeps the attempt's lease until ctx ends, every everyMS; an
// answer that the attempt is no longer ours cancels it.
func (w *Worker) heartbeat(ctx context.Context, ref client.TaskRef, everyMS int64, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(time.Duration(max(everyMS, 10)) * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, err := w.c.HeartbeatTask(ctx, client.HeartbeatRequest{TaskRef: ref})
		var se *client.Error
		if errors.As(err, &se) && (se.Status == http.StatusConflict || se.Status == http.StatusNotFound) {
			cancel(fmt.Errorf("%w: %s", errLost, se.Message))
			return
		}
		if err != nil && ctx.Err() == nil {
			w.log.Warn("worker: heartbeat failed", "run", ref.RunID, "key", ref.Key, "attempt", ref.Attempt, "err", err)
		}
	}
}

// call runs fn, turning a panic into an error.
func call(ctx context.Context, fn activity.Func, input []byte) (out []byte, err error) {
	if fn == nil {
		return nil, activity.NonRetryable(errors.New("no activity of this name is registered on the worker"))
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("activity panicked: %v", v)
		}
	}()
	return fn(ctx, input)
}
