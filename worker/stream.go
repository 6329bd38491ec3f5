package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/client"
)

// The worker stream (docs/api.md, "POST /v1/tasks/stream"): one connection on
// which the server pushes tasks up to the worker's credit and the worker
// sends its results, credit and heartbeats in batches. The attempts, the
// results not yet acknowledged and the free slots outlive a stream: a
// broken stream is opened again, with the unacknowledged results sent
// again (the server answers a result it has already recorded with a
// conflict, and changes nothing).

// errNoStream is a server without the stream (404): use the JSON calls.
var errNoStream = errors.New("the server has no worker stream")

// streamState is what the streams of one Run share.
type streamState struct {
	w       *Worker
	runCtx  context.Context // Run's
	tctx    context.Context // the activities', ended when the worker stops
	tasks   sync.WaitGroup
	mu      sync.Mutex
	free    int                                          // slots not running a task
	credit  int                                          // credit to grant on the current stream
	results []client.StreamResult                        // ends to send
	unacked map[client.StreamAttempt]client.StreamResult // sent, not acknowledged
	running map[client.StreamAttempt]context.CancelCauseFunc
	hbEvery time.Duration
	notify  chan struct{} // a result or credit to send (buffered 1)
}

// runStream serves tasks over the worker stream until ctx ends, opening
// it again when it breaks. It returns errNoStream when the server has none
// and before any task ran.
func (w *Worker) runStream(ctx context.Context, names []string) error {
	tctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	st := &streamState{w: w, runCtx: ctx, tctx: tctx, free: w.o.Concurrency, unacked: map[client.StreamAttempt]client.StreamResult{},
		running: map[client.StreamAttempt]context.CancelCauseFunc{}, hbEvery: time.Second, notify: make(chan struct{}, 1)}
	backoff := time.Duration(0)
	for first := true; ; first = false {
		err := st.session(ctx, names)
		if errors.Is(err, errNoStream) && first {
			return err
		}
		var se *client.Error
		if errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden || se.Status == http.StatusBadRequest || se.Code == client.CodeForbidden) {
			stop()
			st.tasks.Wait()
			return fmt.Errorf("worker: the server refused the worker stream: %w", err)
		}
		if ctx.Err() != nil {
			break
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		w.log.Warn("worker: the worker stream ended; opening it again", "err", err, "in", backoff)
		sleep(ctx, backoff)
		if ctx.Err() != nil {
			break
		}
	}
	// Stopping: the activities end with ErrStopping; their ends are sent
	// on a last stream.
	stop()
	st.tasks.Wait()
	if st.pending() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
		defer cancel()
		if err := st.session(rctx, names); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			w.log.Warn("worker: report the attempts' ends", "err", err)
		}
	}
	return nil
}

// pending reports whether ends are left to send or acknowledge.
func (st *streamState) pending() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.results)+len(st.unacked) > 0
}

// session runs one stream until it breaks or ctx ends. Once the
// activities have stopped (tctx ended), it only sends the ends left and
// closes once they are acknowledged.
func (st *streamState) session(ctx context.Context, names []string) error {
	st.mu.Lock()
	for _, r := range st.unacked { // sent on a stream that broke: again
		st.results = append(st.results, r)
	}
	clear(st.unacked)
	credit := st.free
	if st.tctx.Err() != nil {
		credit = 0
	}
	st.credit = 0
	st.mu.Unlock()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, _, err := st.w.c.OpenTaskStream(sctx, client.StreamFrame{Type: client.FrameHello, Worker: st.w.o.Identity, Names: names, Credit: credit})
	if err != nil {
		if se, ok := errors.AsType[*client.Error](err); ok && se.Status == http.StatusNotFound {
			return errNoStream
		}
		return err
	}
	defer s.Close()
	sent := make(chan error, 1)
	go func() { sent <- st.send(sctx, s) }()
	err = st.receive(s)
	cancel()
	if serr := <-sent; err == nil || errors.Is(err, io.EOF) {
		err = serr
	}
	return err
}

// receive handles the server's frames until the stream ends.
func (st *streamState) receive(s *client.TaskStream) error {
	for {
		f, err := s.Recv()
		if err != nil {
			return err
		}
		switch f.Type {
		case client.FrameTasks:
			for _, t := range f.Tasks {
				st.start(t)
			}
		case client.FrameAcks:
			st.acked(f.Acks)
		case client.FrameLeases:
			for _, c := range f.Cancels {
				st.lost(c)
			}
		}
	}
}

// acked forgets the acknowledged ends; an AckError end is sent again.
func (st *streamState) acked(acks []client.StreamAck) {
	st.mu.Lock()
	defer st.mu.Unlock()
	defer st.wake()
	for _, a := range acks {
		r, ok := st.unacked[a.StreamAttempt]
		delete(st.unacked, a.StreamAttempt)
		switch a.Status {
		case client.AckError:
			if ok {
				st.results = append(st.results, r)
			}
		case client.AckConflict, client.AckNotFound, client.AckInvalid:
			st.w.log.Warn("worker: the server refused an attempt's end", "run", a.RunID, "key", a.Key, "attempt", a.Attempt, "status", a.Status, "err", a.Error)
		}
	}
}

// lost cancels an attempt the server says is no longer this worker's.
func (st *streamState) lost(c client.StreamCancel) {
	st.mu.Lock()
	cancel := st.running[c.StreamAttempt]
	st.mu.Unlock()
	if cancel != nil {
		cancel(fmt.Errorf("%w: %s", errLost, c.Reason))
	}
}

// wake tells the sender there is something to send; st.mu is held or not.
func (st *streamState) wake() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// send sends the ends and credit as they come, in batches, and the
// heartbeats of the running attempts, until ctx ends. Once the
// activities have stopped and every end is acknowledged, it closes the
// worker's side.
func (st *streamState) send(ctx context.Context, s *client.TaskStream) error {
	tick := time.NewTicker(st.heartbeatEvery())
	defer tick.Stop()
	stopped := st.tctx.Done() // once: then every end and ack wakes the sender
	for {
		var beat bool
		select {
		case <-ctx.Done():
			return nil
		case <-st.notify:
		case <-tick.C:
			beat = true
			tick.Reset(st.heartbeatEvery())
		case <-stopped:
			stopped = nil
		}
		frames, done := st.frames(beat)
		if len(frames) > 0 {
			if err := s.Send(frames...); err != nil {
				return err
			}
		}
		if done {
			return s.CloseSend()
		}
	}
}

func (st *streamState) heartbeatEvery() time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.hbEvery
}

// frames takes what is to send: the ends (as sent, until acknowledged),
// the credit, and with beat the heartbeats. done: the worker stops and
// nothing is left.
func (st *streamState) frames(beat bool) (frames []client.StreamFrame, done bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for len(st.results) > 0 {
		n := min(len(st.results), 1000)
		batch := st.results[:n:n]
		for _, r := range batch {
			st.unacked[r.StreamAttempt] = r
		}
		frames = append(frames, client.StreamFrame{Type: client.FrameResults, Results: batch})
		st.results = st.results[n:]
	}
	st.results = nil
	if st.credit > 0 && st.tctx.Err() == nil {
		frames = append(frames, client.StreamFrame{Type: client.FrameCredit, Credit: st.credit})
		st.credit = 0
	}
	if beat && len(st.running) > 0 {
		f := client.StreamFrame{Type: client.FrameHeartbeats}
		for a := range st.running {
			f.Heartbeats = append(f.Heartbeats, client.StreamHeartbeat{StreamAttempt: a})
		}
		frames = append(frames, f)
	}
	done = st.tctx.Err() != nil && len(st.running) == 0 && len(st.unacked) == 0 && len(frames) == 0
	return frames, done
}

// start runs a pushed task in a goroutine of its own.
func (st *streamState) start(t client.ClaimedTask) {
	a := client.StreamAttempt{RunID: t.RunID, Key: t.Key, Attempt: t.Attempt}
	info := activity.Info{RunID: t.RunID, Key: t.Key, Name: t.Name, Attempt: t.Attempt, IdempotencyKey: t.IdempotencyKey,
		Traceparent: t.Traceparent}
	actx, cancel := context.WithCancelCause(activity.WithInfo(st.tctx, info))
	st.mu.Lock()
	st.free--
	st.running[a] = cancel
	if hb := time.Duration(max(t.HeartbeatMS, 10)) * time.Millisecond; hb < st.hbEvery {
		st.hbEvery = hb
	}
	st.mu.Unlock()
	st.tasks.Add(1)
	go func() {
		defer st.tasks.Done()
		defer cancel(nil)
		st.finish(a, st.run(actx, t))
	}()
}

// run runs the attempt and returns its end, or nil when it was lost.
func (st *streamState) run(actx context.Context, t client.ClaimedTask) *client.StreamResult {
	if t.TimeoutMS > 0 {
		var c context.CancelFunc
		actx, c = context.WithTimeout(actx, time.Duration(t.TimeoutMS)*time.Millisecond)
		defer c()
	}
	out, err := call(actx, st.w.fn(t.Name), t.Input)
	if cause := context.Cause(actx); errors.Is(cause, errLost) {
		st.w.log.Warn("worker: attempt abandoned", "run", t.RunID, "key", t.Key, "attempt", t.Attempt, "why", cause)
		return nil
	}
	if err != nil && st.runCtx.Err() != nil && errors.Is(err, context.Canceled) {
		err = ErrStopping
	}
	r := &client.StreamResult{StreamAttempt: client.StreamAttempt{RunID: t.RunID, Key: t.Key, Attempt: t.Attempt}}
	if err != nil {
		var nr *activity.NonRetryableError
		r.Error, r.NonRetryable = err.Error(), errors.As(err, &nr)
		return r
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	r.Result = out
	return r
}

// finish frees the attempt's slot and queues its end.
func (st *streamState) finish(a client.StreamAttempt, r *client.StreamResult) {
	st.mu.Lock()
	delete(st.running, a)
	st.free++
	st.credit++
	if r != nil {
		st.results = append(st.results, *r)
	}
	st.mu.Unlock()
	st.wake()
}
