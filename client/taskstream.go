package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// The worker stream (docs/api.md, "POST /v1/tasks/stream"): one
// POST /v1/tasks/stream, full duplex, carries newline-delimited JSON
// frames both ways. The worker opens it with a hello frame and grants
// credit; the server pushes tasks as they are created, up to the credit,
// and acknowledges the results and heartbeats the worker sends in batches.

// Frame types of the worker stream.
const (
	FrameHello      = "hello"      // worker: identity, activities, first credit
	FrameCredit     = "credit"     // worker: room for Credit more tasks
	FrameResults    = "results"    // worker: attempts ended
	FrameHeartbeats = "heartbeats" // worker: leases to extend
	FrameReady      = "ready"      // server: the stream is open
	FrameTasks      = "tasks"      // server: attempts claimed for the worker
	FrameAcks       = "acks"       // server: what became of results
	FrameLeases     = "leases"     // server: leases extended
	FrameCancel     = "cancel"     // server: attempts the worker must stop
	FrameError      = "error"      // server: the stream ends for this reason
)

// StreamFrame is one line of the worker stream, either way; Type says
// which fields it carries.
type StreamFrame struct {
	Type string `json:"type"`
	// Worker and Names: hello (Worker also in ready). Credit: hello and
	// credit.
	Worker string   `json:"worker,omitempty"`
	Names  []string `json:"names,omitempty"`
	Credit int      `json:"credit,omitempty"`
	// Results: results; Heartbeats: heartbeats.
	Results    []StreamResult    `json:"results,omitempty"`
	Heartbeats []StreamHeartbeat `json:"heartbeats,omitempty"`
	// Tasks: tasks; Acks: acks; Leases: leases; Cancels: cancel.
	Tasks   []ClaimedTask  `json:"tasks,omitempty"`
	Acks    []StreamAck    `json:"acks,omitempty"`
	Leases  []StreamLease  `json:"leases,omitempty"`
	Cancels []StreamCancel `json:"cancels,omitempty"`
	// Error: error.
	Error *ErrorDetail `json:"error,omitempty"`
}

// StreamAttempt names an attempt on the stream; the worker is the hello's.
type StreamAttempt struct {
	RunID   string `json:"run_id"`
	Key     string `json:"key"`
	Attempt int    `json:"attempt"`
}

// StreamResult is the end of an attempt: Result (any JSON), or Error
// (non-empty) for a failure.
type StreamResult struct {
	StreamAttempt
	Result       json.RawMessage `json:"result,omitempty"`
	Error        string          `json:"error,omitempty"`
	NonRetryable bool            `json:"non_retryable,omitempty"`
}

// StreamHeartbeat asks to extend an attempt's lease, with optional
// progress (JSON).
type StreamHeartbeat struct {
	StreamAttempt
	Progress json.RawMessage `json:"progress,omitempty"`
}

// Statuses of a StreamAck.
const (
	AckCompleted = "completed" // the result is the call's outcome
	AckRetry     = "retry"     // the failure queued another attempt
	AckFailed    = "failed"    // the failure is the call's outcome
	AckConflict  = "conflict"  // the attempt was no longer the worker's: nothing changed
	AckNotFound  = "not_found" // no such task: nothing changed
	AckInvalid   = "bad_request"
	AckError     = "error" // the server could not record it: send it again
)

// StreamAck says what became of one result. Every status but AckError is
// final.
type StreamAck struct {
	StreamAttempt
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// StreamLease is an attempt's lease after a heartbeat, or why it was not
// extended (Error, the attempt kept: send the next heartbeat as usual).
type StreamLease struct {
	StreamAttempt
	LeaseExpiry time.Time `json:"lease_expiry,omitzero"`
	Error       string    `json:"error,omitempty"`
}

// StreamCancel is an attempt the worker must stop: it is no longer its
// (canceled, timed out, ended) or unknown.
type StreamCancel struct {
	StreamAttempt
	Reason string `json:"reason"`
}

// TaskStream is an open worker stream. Send and Recv may be called from
// different goroutines; Send is safe for concurrent use, Recv is not.
type TaskStream struct {
	mu   sync.Mutex
	pw   *io.PipeWriter
	buf  bytes.Buffer
	resp *http.Response
	dec  *json.Decoder
}

// OpenTaskStream opens the worker stream (POST /v1/tasks/stream) with the
// frame hello (Type FrameHello) and returns it once the server has
// answered with its ready frame. A server without the stream answers
// 404: an *Error for which IsNotFound is true (use the JSON calls). The
// stream ends with ctx.
func (c *Client) OpenTaskStream(ctx context.Context, hello StreamFrame) (*TaskStream, StreamFrame, error) {
	line, err := json.Marshal(hello)
	if err != nil {
		return nil, StreamFrame{}, fmt.Errorf("POST /v1/tasks/stream: encoding the hello: %w", err)
	}
	pr, pw := io.Pipe()
	body := io.MultiReader(bytes.NewReader(append(line, '\n')), pr)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/tasks/stream", body)
	if err != nil {
		return nil, StreamFrame{}, fmt.Errorf("POST /v1/tasks/stream: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Accept", "application/x-ndjson")
	// A server without the stream answers 404 without reading the body;
	// without this it would first wait for the body to end, which it
	// does not.
	req.Header.Set("Expect", "100-continue")
	c.identify(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		_ = pw.Close()
		if ctx.Err() != nil {
			return nil, StreamFrame{}, ctx.Err()
		}
		return nil, StreamFrame{}, &UnreachableError{Server: c.base, Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		defer func() { _ = resp.Body.Close() }()
		_ = pw.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, StreamFrame{}, answerError(request{method: http.MethodPost, path: "/v1/tasks/stream"}, resp.StatusCode, data)
	}
	s := &TaskStream{pw: pw, resp: resp, dec: json.NewDecoder(bufio.NewReader(resp.Body))}
	ready, err := s.Recv()
	if err == nil && ready.Type != FrameReady {
		err = fmt.Errorf("POST /v1/tasks/stream: the server's first frame is %q, not %q", ready.Type, FrameReady)
	}
	if err != nil {
		s.Close()
		return nil, StreamFrame{}, err
	}
	return s, ready, nil
}

// Send writes frames to the server, one line each, in one write.
func (s *TaskStream) Send(frames ...StreamFrame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
	enc := json.NewEncoder(&s.buf)
	for _, f := range frames {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("worker stream: encoding a %s frame: %w", f.Type, err)
		}
	}
	if _, err := s.pw.Write(s.buf.Bytes()); err != nil {
		return fmt.Errorf("worker stream: sending: %w", err)
	}
	return nil
}

// Recv returns the server's next frame. An error frame is returned as an
// *Error (Status 0) with its code and message; the stream has ended then.
// The end of the stream is io.EOF.
func (s *TaskStream) Recv() (StreamFrame, error) {
	var f StreamFrame
	if err := s.dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return f, io.EOF
		}
		return f, fmt.Errorf("worker stream: receiving: %w", err)
	}
	if f.Type == FrameError {
		e := &Error{Message: "the server ended the worker stream"}
		if f.Error != nil {
			e.Code, e.Message = Code(f.Error.Code), f.Error.Message
		}
		return f, e
	}
	return f, nil
}

// CloseSend ends the worker's side of the stream: the server acknowledges
// what it has received, then ends its side (Recv returns io.EOF).
func (s *TaskStream) CloseSend() error { return s.pw.Close() }

// Close ends the stream both ways at once.
func (s *TaskStream) Close() {
	_ = s.pw.CloseWithError(errors.New("worker stream closed"))
	_ = s.resp.Body.Close()
}
