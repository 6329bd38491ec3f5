package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// The worker stream's frames: reading, checking and answering them.

// maxBatch is the most results or heartbeats one frame carries.
const maxBatch = 1000

var errFrameTooLarge = errors.New("the frame is larger than the limit")

// readLine reads one line of at most limit bytes (its newline
// included), skipping blank ones. A last line without a newline comes
// with io.EOF.
func readLine(br *bufio.Reader, limit int64) ([]byte, error) {
	for {
		var long []byte
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			if int64(len(long)) > limit {
				return nil, fmt.Errorf("%w of %d bytes (--max-request-bytes)", errFrameTooLarge, limit)
			}
			line, err = br.ReadSlice('\n')
		}
		if long != nil {
			line = append(long, line...)
		} else {
			line = bytes.Clone(line)
		}
		if int64(len(line)) > limit {
			return nil, fmt.Errorf("%w of %d bytes (--max-request-bytes)", errFrameTooLarge, limit)
		}
		if len(bytes.TrimSpace(line)) > 0 || err != nil {
			if len(bytes.TrimSpace(line)) == 0 {
				line = nil
			}
			return line, err
		}
	}
}

// decodeFrame decodes the line of frame n, strictly: unknown fields and a
// second value on the line are errors.
func decodeFrame(line []byte, n int) (client.StreamFrame, error) {
	var f client.StreamFrame
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, badRequest("frame %d is not a JSON object of the worker stream: %v", n, err)
	}
	if dec.More() {
		return f, badRequest("frame %d: a line holds one JSON object", n)
	}
	if f.Type == "" {
		return f, badRequest(`frame %d has no "type"`, n)
	}
	return f, nil
}

func encodeFrame(w io.Writer, f client.StreamFrame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("worker stream: encode a %s frame: %w", f.Type, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// handle acts on frame n of the worker. An error ends the stream: the
// frame breaks the protocol.
func (s *taskStream) handle(f client.StreamFrame, n int) error {
	switch f.Type {
	case client.FrameCredit:
		if f.Credit < 1 || f.Credit > maxStreamCredit {
			return fmt.Errorf(`frame %d: a credit frame grants 1 to %d tasks (got %d)`, n, maxStreamCredit, f.Credit)
		}
		s.grant(f.Credit)
	case client.FrameResults:
		if len(f.Results) == 0 || len(f.Results) > maxBatch {
			return fmt.Errorf("frame %d: a results frame carries 1 to %d results (got %d)", n, maxBatch, len(f.Results))
		}
		s.batch(len(f.Results), func(i int) any { return s.endAttempt(f.Results[i]) },
			func(out []any) client.StreamFrame {
				acks := make([]client.StreamAck, len(out))
				for i, o := range out {
					acks[i] = o.(client.StreamAck)
				}
				return client.StreamFrame{Type: client.FrameAcks, Acks: acks}
			})
	case client.FrameHeartbeats:
		if len(f.Heartbeats) == 0 || len(f.Heartbeats) > maxBatch {
			return fmt.Errorf("frame %d: a heartbeats frame carries 1 to %d heartbeats (got %d)", n, maxBatch, len(f.Heartbeats))
		}
		s.batch(len(f.Heartbeats), func(i int) any { return s.heartbeat(f.Heartbeats[i]) }, leasesFrames)
	case client.FrameHello:
		return fmt.Errorf("frame %d: a second hello (one per stream)", n)
	default:
		return fmt.Errorf(`frame %d: unknown frame type %q (a worker sends "credit", "results" or "heartbeats")`, n, f.Type)
	}
	return nil
}

// batch runs do for the n items of a frame, several at once (the store
// commits them together), and then sends the frame answer makes of their
// answers, in order.
func (s *taskStream) batch(n int, do func(i int) any, answer func([]any) client.StreamFrame) {
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		out := make([]any, n)
		var wg sync.WaitGroup
		for i := range n {
			s.sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-s.sem }()
				out[i] = do(i)
			})
		}
		wg.Wait()
		if f := answer(out); f.Type != "" {
			s.send(f)
		}
	}()
}

// ref is the host's name of the attempt a, held by the stream's worker.
func (s *taskStream) ref(a client.StreamAttempt) (host.TaskRef, error) {
	if a.RunID == "" || a.Key == "" || a.Attempt < 1 {
		return host.TaskRef{}, fmt.Errorf(`"run_id", "key" and "attempt" (>= 1) are needed (got run_id %q, key %q, attempt %d)`, a.RunID, a.Key, a.Attempt)
	}
	return host.TaskRef{RunID: a.RunID, Key: a.Key, Attempt: a.Attempt, Worker: s.worker}, nil
}

// endAttempt records one result, as POST /v1/tasks/complete or /fail.
func (s *taskStream) endAttempt(r client.StreamResult) client.StreamAck {
	ack := client.StreamAck{StreamAttempt: r.StreamAttempt}
	ref, err := s.ref(r.StreamAttempt)
	switch {
	case err != nil:
	case r.Error != "" && len(r.Result) > 0:
		err = errors.New(`a result has "result" or "error", not both`)
	case r.Error == "" && len(r.Result) == 0:
		err = errors.New(`a result needs "result" (any JSON; null for none) or "error" (non-empty)`)
	}
	if err != nil {
		ack.Status, ack.Error = client.AckInvalid, err.Error()
		return ack
	}
	ctx, cancel := context.WithTimeout(s.endCtx, streamEndWait)
	defer cancel()
	if r.Error == "" {
		ack.Status = client.AckCompleted
		err = s.c.CompleteTask(ctx, ref, r.Result)
	} else {
		var retry bool
		retry, err = s.c.FailTask(ctx, ref, r.Error, r.NonRetryable)
		ack.Status = map[bool]string{true: client.AckRetry, false: client.AckFailed}[retry]
	}
	if err != nil {
		ack.Status, ack.Error = s.ackStatus(err), err.Error()
	}
	return ack
}

// ackStatus is the status of a result the host refused with err.
func (s *taskStream) ackStatus(err error) string {
	switch {
	case errors.Is(err, host.ErrInvalid), errors.Is(err, store.ErrInvalidText):
		return client.AckInvalid
	case errors.Is(err, store.ErrNotFound):
		return client.AckNotFound
	case errors.Is(err, store.ErrConflict):
		return client.AckConflict
	}
	s.a.log.Warn("worker stream: record a result", "worker", s.worker, "err", err)
	return client.AckError
}

// heartbeat extends one lease, as POST /v1/tasks/heartbeat: the answer
// is a StreamLease, or a StreamCancel when the attempt is no longer the
// worker's.
func (s *taskStream) heartbeat(hb client.StreamHeartbeat) any {
	ref, err := s.ref(hb.StreamAttempt)
	if err != nil {
		return client.StreamLease{StreamAttempt: hb.StreamAttempt, Error: err.Error()}
	}
	ctx, cancel := context.WithTimeout(s.endCtx, streamEndWait)
	defer cancel()
	t, err := s.c.HeartbeatTask(ctx, ref, hb.Progress)
	switch {
	case err == nil:
		return client.StreamLease{StreamAttempt: hb.StreamAttempt, LeaseExpiry: nsTime(t.Expiry)}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict):
		return client.StreamCancel{StreamAttempt: hb.StreamAttempt, Reason: err.Error()}
	}
	return client.StreamLease{StreamAttempt: hb.StreamAttempt, Error: err.Error()}
}

// leasesFrames is the answer to a heartbeats frame: one leases frame,
// with the leases extended and the attempts to stop (cancels).
func leasesFrames(out []any) client.StreamFrame {
	f := client.StreamFrame{Type: client.FrameLeases}
	var c []client.StreamCancel
	for _, o := range out {
		switch v := o.(type) {
		case client.StreamLease:
			f.Leases = append(f.Leases, v)
		case client.StreamCancel:
			c = append(c, v)
		}
	}
	if len(c) > 0 {
		f.Cancels = c
	}
	return f
}
