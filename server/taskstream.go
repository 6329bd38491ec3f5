package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
)

// The worker stream (docs/api.md, "POST /v1/tasks/stream"): POST
// /v1/tasks/stream is one full-duplex exchange of newline-delimited JSON
// frames. The worker's hello names it, its activities and its first
// credit; the server pushes claimed tasks up to the credit, as they are
// created (the claim waits on the host's task board), and answers the
// results and heartbeats the worker sends in batches. Every task is
// claimed, extended and ended through the same host calls as the JSON
// protocol, under the hello's worker identity: the same leases, attempts
// and exactly-once ends. A stream that breaks leaves its claimed tasks to
// expire and be claimed again.

// streamRoute is the worker stream: its deadline bounds the hello only.
var streamRoute = routeClass{bodyTypes: []string{"application/x-ndjson", "application/json"},
	timeout: func(o *Options) time.Duration { return o.RequestTimeout },
	limit:   "--request-timeout, server.Options.RequestTimeout"}

// maxStreamCredit caps the credit a worker holds: tasks pushed and not yet
// ended, plus the room it granted.
const maxStreamCredit = 1 << 16

// streamEndWait bounds recording the results and heartbeats read before
// a stream ended.
const streamEndWait = 30 * time.Second

// taskStream is one open worker stream.
type taskStream struct {
	a      *api
	c      host.Client // the request's namespace view
	worker string
	names  []string
	rc     *http.ResponseController
	ctx    context.Context // ends when the stream does: claims stop
	cancel context.CancelFunc
	endCtx context.Context // for what was read before the end

	out     chan client.StreamFrame
	outDone chan struct{} // the writer stopped (the connection failed)
	work    sync.WaitGroup
	sem     chan struct{} // bounds the host calls in flight

	mu     sync.Mutex
	credit int
	more   chan struct{} // closed (and replaced) when credit is granted
	cause  *client.ErrorDetail
}

func (a *api) taskStream(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		a.fail(w, r, fmt.Errorf("worker stream: full duplex: %w", err))
		return
	}
	br := bufio.NewReaderSize(r.Body, 64<<10)
	hello, err := a.readHello(br)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	// From here the stream lives until either side ends it.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s := &taskStream{a: a, c: a.c(r), worker: hello.Worker, names: hello.Names, rc: rc, ctx: ctx, cancel: cancel,
		endCtx: context.WithoutCancel(r.Context()), out: make(chan client.StreamFrame, 64),
		outDone: make(chan struct{}), sem: make(chan struct{}, 64), credit: hello.Credit, more: make(chan struct{})}
	written := make(chan struct{})
	go func() { defer close(written); s.write(w) }()
	s.send(client.StreamFrame{Type: client.FrameReady, Worker: s.worker})
	defer context.AfterFunc(a.o.Stop, func() {
		s.end(&client.ErrorDetail{Code: CodeUnavailable, Message: "the server is stopping: open the stream again"})
	})()
	claimed := make(chan struct{})
	go func() { defer close(claimed); s.claim() }()

	last := s.read(br)
	cancel()
	<-claimed
	s.work.Wait()
	if last == nil {
		last = s.ended() // the claim's refusal of the hello
	}
	if last != nil {
		s.send(client.StreamFrame{Type: client.FrameError, Error: last})
	}
	close(s.out)
	<-written
}

// readHello reads and checks the stream's first frame.
func (a *api) readHello(br *bufio.Reader) (client.StreamFrame, error) {
	line, err := readLine(br, a.o.MaxRequestBytes)
	var bte *bodyTimeoutError
	switch {
	case errors.As(err, &bte):
		return client.StreamFrame{}, err
	case err != nil && len(line) == 0:
		return client.StreamFrame{}, badRequest("the worker stream opens with a hello frame: %v", err)
	}
	f, err := decodeFrame(line, 1)
	if err != nil {
		return f, err
	}
	switch {
	case f.Type != client.FrameHello:
		return f, badRequest(`frame 1: the worker stream opens with a "hello" frame (got %q)`, f.Type)
	case f.Worker == "" || len(f.Names) == 0:
		return f, badRequest(`frame 1: a hello needs "worker" and "names" (got worker %q, %d names)`, f.Worker, len(f.Names))
	case f.Credit < 0 || f.Credit > maxStreamCredit:
		return f, badRequest(`frame 1: "credit" must be 0 to %d (got %d)`, maxStreamCredit, f.Credit)
	case len(f.Results) > 0 || len(f.Heartbeats) > 0:
		return f, badRequest("frame 1: a hello carries no results or heartbeats")
	}
	return f, nil
}

// send queues f for the worker; it is dropped once the connection failed.
func (s *taskStream) send(f client.StreamFrame) {
	select {
	case s.out <- f:
	case <-s.outDone:
	}
}

// write sends the queued frames, as many as are queued in one flush,
// until out is closed. A failed write ends the stream.
func (s *taskStream) write(w io.Writer) {
	bw := bufio.NewWriterSize(w, 32<<10)
	for f := range s.out {
		err := encodeFrame(bw, f)
		for more := true; more && err == nil; {
			select {
			case f, ok := <-s.out:
				if !ok {
					more = false
					break
				}
				err = encodeFrame(bw, f)
			default:
				more = false
			}
		}
		if err == nil {
			err = bw.Flush()
		}
		if err == nil {
			err = s.rc.Flush()
		}
		if err != nil {
			close(s.outDone)
			s.end(nil)
			for range s.out { // until the handler closes it
			}
			return
		}
	}
}

// end ends the stream: the reader wakes, the claims stop. cause, if not
// nil and the first, is the error frame the worker gets last.
func (s *taskStream) end(cause *client.ErrorDetail) {
	s.mu.Lock()
	if s.cause == nil {
		s.cause = cause
	}
	s.mu.Unlock()
	s.cancel()
	_ = s.rc.SetReadDeadline(time.Now())
}

// ended returns the cause end was given first.
func (s *taskStream) ended() *client.ErrorDetail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause
}

// grant adds n to the credit.
func (s *taskStream) grant(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.credit = min(s.credit+n, maxStreamCredit)
	close(s.more)
	s.more = make(chan struct{})
}

// take waits for credit and takes up to host.MaxClaim of it; 0 when the
// stream ends first.
func (s *taskStream) take() int {
	for {
		s.mu.Lock()
		if n := min(s.credit, host.MaxClaim); n > 0 {
			s.credit -= n
			s.mu.Unlock()
			return n
		}
		more := s.more
		s.mu.Unlock()
		select {
		case <-s.ctx.Done():
			return 0
		case <-more:
		}
	}
}

// claim claims tasks for the credit and pushes them, until the stream
// ends. A claim waits on the host's task board: a run that commits a new
// task hands it to the waiting claim in the same commit.
func (s *taskStream) claim() {
	backoff := time.Duration(0)
	for {
		n := s.take()
		if n == 0 {
			return
		}
		ts, err := s.c.ClaimTasks(s.ctx, host.ClaimOptions{Worker: s.worker, Names: s.names, Max: n, Wait: s.a.o.MaxClaimWait})
		s.grant(n - len(ts))
		if len(ts) > 0 {
			f := client.StreamFrame{Type: client.FrameTasks, Tasks: make([]client.ClaimedTask, 0, len(ts))}
			now := time.Now()
			for _, t := range ts {
				f.Tasks = append(f.Tasks, taskJSON(t, now))
			}
			s.send(f)
		}
		switch {
		case err == nil:
			backoff = 0
		case isForbidden(err): // a worker key not granted a name it asked for
			s.end(&client.ErrorDetail{Code: CodeForbidden, Message: "frame 1: " + err.Error()})
			return
		case errors.Is(err, host.ErrInvalid):
			s.end(&client.ErrorDetail{Code: CodeBadRequest, Message: "frame 1: " + err.Error()})
			return
		case s.ctx.Err() != nil:
			return
		default:
			backoff = min(max(2*backoff, 50*time.Millisecond), 2*time.Second)
			s.a.log.Warn("worker stream: claim tasks", "worker", s.worker, "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-s.ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// read reads the worker's frames until the stream ends, and returns the
// error frame to end it with (nil for none: the worker closed its side,
// or the connection broke).
func (s *taskStream) read(br *bufio.Reader) *client.ErrorDetail {
	for n := 2; ; n++ {
		line, err := readLine(br, s.a.o.MaxRequestBytes)
		if len(line) > 0 {
			f, ferr := decodeFrame(line, n)
			if ferr == nil {
				ferr = s.handle(f, n)
			}
			if ferr != nil {
				return &client.ErrorDetail{Code: CodeBadRequest, Message: ferr.Error()}
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, errFrameTooLarge):
			return &client.ErrorDetail{Code: CodeTooLarge, Message: fmt.Sprintf("frame %d: %v", n, err)}
		case errors.Is(err, io.EOF):
			return s.ended()
		case errors.Is(err, os.ErrDeadlineExceeded):
			return s.ended()
		default:
			if c := s.ended(); c != nil {
				return c
			}
			s.a.log.Debug("worker stream: the connection ended", "worker", s.worker, "err", err)
			return nil
		}
	}
}
