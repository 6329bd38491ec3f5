package abi

import (
	"encoding/binary"
	"errors"
)

// ErrShort is returned by decoders when a message ends early.
var ErrShort = errors.New("abi: message too short")

// Outcome is a settled value or error. Status is StatusOK or StatusError.
type Outcome struct {
	Status uint32
	Data   []byte // JSON value, or error text
}

// Invocation is what FnInvocation returns: which workflow to run with
// what input.
type Invocation struct {
	Mode     uint8
	Workflow string
	Input    []byte
}

// OpResult is what FnOp returns.
type OpResult struct {
	State   uint8
	Promise uint32 // promise handle (spawn/branch: the join promise; fork: the fork handle)
	Task    uint32 // spawn/branch: the new task's handle
	Key     string // the op's lineage key (fork: the fork key)
	Outcome Outcome
	// Attempt (StateRunBody) is the durable attempt number of the body
	// about to run: 1, 2, … It follows the key, and a host before it sent
	// none: a decoder reads it when the message holds it, else 0.
	Attempt uint32
	// IDError fields (StateIDError).
	Scope, Name, Rule, Message string
}

// Resume is what FnNext returns: which task runs now.
type Resume struct {
	Kind    uint8
	Task    uint32
	Promise uint32 // ResumeWake: the promise that settled (0 for a body wake)
	Outcome Outcome
}

// Wait is what FnAwait and FnSelect return.
type Wait struct {
	Ready   bool
	Index   uint32 // FnSelect: index of the settled future
	Outcome Outcome
}

// OutcomeEntry is one element of the FnOutcomes message.
type OutcomeEntry struct {
	Key, Function string
	Outcome       Outcome
}

// OpOptions is the FnOpOptions message: the retry policy and timeout of
// the next op (a step or a call) the task issues. Zero fields mean none.
type OpOptions struct {
	MaxAttempts    uint32   // total attempts, the first included; 0 or 1: no retry
	InitialBackoff uint64   // ns before the second attempt
	MaxBackoff     uint64   // ns; cap of the exponential backoff (0: none)
	Multiplier     uint32   // backoff growth per attempt, in thousandths (2000 = x2)
	Jitter         uint32   // random spread of each backoff, in thousandths (200 = ±20%)
	Timeout        uint64   // ns per attempt (0: none)
	NonRetryable   []string // an error whose text contains one of these is not retried
	// ParentClose (a child op only) is what the end of the parent does to
	// the child run when it has not ended: ParentCloseCancel or
	// ParentCloseAbandon; 0 is the default, cancel. It follows
	// NonRetryable; a message without it (a guest before it) means 0.
	ParentClose uint32
	// OnExhausted (a step or call with retries) is what the host does
	// when they run out: OnExhaustedFail (0) or OnExhaustedPause. It
	// follows ParentClose; a message without it means 0.
	OnExhausted uint32
}

// AppendOpOptions encodes OpOptions.
func AppendOpOptions(b []byte, m OpOptions) []byte {
	e := Enc{b}
	e.U32(m.MaxAttempts)
	e.U64(m.InitialBackoff)
	e.U64(m.MaxBackoff)
	e.U32(m.Multiplier)
	e.U32(m.Jitter)
	e.U64(m.Timeout)
	e.U32(uint32(len(m.NonRetryable)))
	for _, s := range m.NonRetryable {
		e.Str(s)
	}
	e.U32(m.ParentClose)
	e.U32(m.OnExhausted)
	return e.B
}

// DecodeOpOptions decodes OpOptions.
func DecodeOpOptions(b []byte) (OpOptions, error) {
	d := Dec{B: b}
	m := OpOptions{MaxAttempts: d.U32(), InitialBackoff: d.U64(), MaxBackoff: d.U64(), Multiplier: d.U32(), Jitter: d.U32(), Timeout: d.U64()}
	n := d.U32()
	if d.Err == nil && uint64(n)*4 > uint64(len(d.B)) {
		return m, ErrShort
	}
	for i := uint32(0); i < n && d.Err == nil; i++ {
		m.NonRetryable = append(m.NonRetryable, d.Str())
	}
	if d.Err == nil && len(d.B) > 0 { // absent from a guest before it
		m.ParentClose = d.U32()
	}
	if d.Err == nil && len(d.B) > 0 { // absent from a guest before it
		m.OnExhausted = d.U32()
	}
	return m, d.Err
}

// Enc appends little-endian fields to a byte slice.
type Enc struct{ B []byte }

// U8 appends one byte.
func (e *Enc) U8(v uint8) { e.B = append(e.B, v) }

// U32 appends a little-endian uint32.
func (e *Enc) U32(v uint32) { e.B = binary.LittleEndian.AppendUint32(e.B, v) }

// U64 appends a little-endian uint64.
func (e *Enc) U64(v uint64) { e.B = binary.LittleEndian.AppendUint64(e.B, v) }

// Bytes appends a length-prefixed byte string.
func (e *Enc) Bytes(b []byte) { e.U32(uint32(len(b))); e.B = append(e.B, b...) }

// Str appends a length-prefixed string.
func (e *Enc) Str(s string) { e.U32(uint32(len(s))); e.B = append(e.B, s...) }

// Outcome appends an encoded outcome: status u32, data bytes.
func (e *Enc) Outcome(o Outcome) { e.U32(o.Status); e.Bytes(o.Data) }

// Dec reads fields written by Enc. The first error sticks.
type Dec struct {
	B   []byte
	Err error
}

// U8 reads one byte.
func (d *Dec) U8() uint8 {
	if len(d.B) < 1 {
		d.Err = ErrShort
		return 0
	}
	v := d.B[0]
	d.B = d.B[1:]
	return v
}

// U32 reads a little-endian uint32.
func (d *Dec) U32() uint32 {
	if len(d.B) < 4 {
		d.Err = ErrShort
		return 0
	}
	v := binary.LittleEndian.Uint32(d.B)
	d.B = d.B[4:]
	return v
}

// U64 reads a little-endian uint64.
func (d *Dec) U64() uint64 {
	if len(d.B) < 8 {
		d.Err = ErrShort
		return 0
	}
	v := binary.LittleEndian.Uint64(d.B)
	d.B = d.B[8:]
	return v
}

// Bytes reads a length-prefixed byte string. The result aliases the input.
func (d *Dec) Bytes() []byte {
	n := d.U32()
	if d.Err != nil || uint64(len(d.B)) < uint64(n) {
		d.Err = ErrShort
		return nil
	}
	v := d.B[:n:n]
	d.B = d.B[n:]
	return v
}

// Str reads a length-prefixed string.
func (d *Dec) Str() string { return string(d.Bytes()) }

// Outcome reads an encoded outcome.
func (d *Dec) Outcome() Outcome { return Outcome{Status: d.U32(), Data: d.Bytes()} }

// AppendInvocation encodes an Invocation.
func AppendInvocation(b []byte, m Invocation) []byte {
	e := Enc{b}
	e.U8(m.Mode)
	e.Str(m.Workflow)
	e.Bytes(m.Input)
	return e.B
}

// DecodeInvocation decodes an Invocation.
func DecodeInvocation(b []byte) (Invocation, error) {
	d := Dec{B: b}
	m := Invocation{Mode: d.U8(), Workflow: d.Str(), Input: d.Bytes()}
	return m, d.Err
}

// AppendOpResult encodes an OpResult.
func AppendOpResult(b []byte, m OpResult) []byte {
	e := Enc{b}
	e.U8(m.State)
	e.U32(m.Promise)
	e.U32(m.Task)
	e.Str(m.Key)
	switch m.State {
	case StateSettled:
		e.Outcome(m.Outcome)
	case StateRunBody:
		e.U32(m.Attempt)
	case StateIDError:
		e.Str(m.Scope)
		e.Str(m.Name)
		e.Str(m.Rule)
		e.Str(m.Message)
	}
	return e.B
}

// DecodeOpResult decodes an OpResult.
func DecodeOpResult(b []byte) (OpResult, error) { return decodeOpResult(b, true) }

// DecodeOpResultKeyless decodes an OpResult but leaves Key empty, saving
// a copy of it for callers that never read it (a step's).
func DecodeOpResultKeyless(b []byte) (OpResult, error) { return decodeOpResult(b, false) }

func decodeOpResult(b []byte, withKey bool) (OpResult, error) {
	d := Dec{B: b}
	m := OpResult{State: d.U8(), Promise: d.U32(), Task: d.U32()}
	if key := d.Bytes(); withKey {
		m.Key = string(key)
	}
	switch m.State {
	case StateSettled:
		m.Outcome = d.Outcome()
	case StateRunBody:
		if d.Err == nil && len(d.B) > 0 { // absent from a host before it
			m.Attempt = d.U32()
		}
	case StateIDError:
		m.Scope, m.Name, m.Rule, m.Message = d.Str(), d.Str(), d.Str(), d.Str()
	}
	return m, d.Err
}

// AppendResume encodes a Resume.
func AppendResume(b []byte, m Resume) []byte {
	e := Enc{b}
	e.U8(m.Kind)
	e.U32(m.Task)
	e.U32(m.Promise)
	if m.Kind == ResumeWake && m.Promise != 0 {
		e.Outcome(m.Outcome)
	}
	return e.B
}

// DecodeResume decodes a Resume.
func DecodeResume(b []byte) (Resume, error) {
	d := Dec{B: b}
	m := Resume{Kind: d.U8(), Task: d.U32(), Promise: d.U32()}
	if m.Kind == ResumeWake && m.Promise != 0 {
		m.Outcome = d.Outcome()
	}
	return m, d.Err
}

// AppendWait encodes a Wait.
func AppendWait(b []byte, m Wait) []byte {
	e := Enc{b}
	if !m.Ready {
		e.U8(0)
		return e.B
	}
	e.U8(1)
	e.U32(m.Index)
	e.Outcome(m.Outcome)
	return e.B
}

// DecodeWait decodes a Wait.
func DecodeWait(b []byte) (Wait, error) {
	d := Dec{B: b}
	m := Wait{Ready: d.U8() == 1}
	if m.Ready {
		m.Index = d.U32()
		m.Outcome = d.Outcome()
	}
	return m, d.Err
}

// AppendOutcomes encodes the FnOutcomes message.
func AppendOutcomes(b []byte, es []OutcomeEntry) []byte {
	e := Enc{b}
	e.U32(uint32(len(es)))
	for _, o := range es {
		e.Str(o.Key)
		e.Str(o.Function)
		e.Outcome(o.Outcome)
	}
	return e.B
}

// DecodeOutcomes decodes the FnOutcomes message.
func DecodeOutcomes(b []byte) ([]OutcomeEntry, error) {
	d := Dec{B: b}
	n := d.U32()
	if d.Err != nil {
		return nil, d.Err
	}
	if uint64(n) > uint64(len(d.B)) { // every entry takes at least one byte
		return nil, ErrShort
	}
	out := make([]OutcomeEntry, 0, n)
	for i := uint32(0); i < n && d.Err == nil; i++ {
		out = append(out, OutcomeEntry{Key: d.Str(), Function: d.Str(), Outcome: d.Outcome()})
	}
	return out, d.Err
}

// FeedEntry is one recorded outcome of the FnFeed message: what FnOp
// would return (state settled) for the task's next unnamed op, if that
// op has kind Kind and function Fn. Key and Fn alias the message.
type FeedEntry struct {
	Kind    OpKind
	Promise uint32
	Key, Fn []byte
	Outcome Outcome
}

// AppendFeedHeader encodes the FnFeed message's header.
func AppendFeedHeader(b []byte, replaying bool, count uint32) []byte {
	e := Enc{b}
	if replaying {
		e.U8(1)
	} else {
		e.U8(0)
	}
	e.U32(count)
	return e.B
}

// AppendFeedEntry encodes one entry of the FnFeed message.
func AppendFeedEntry(b []byte, kind OpKind, promise uint32, key, fn string, out Outcome) []byte {
	e := Enc{b}
	e.U8(uint8(kind))
	e.U32(promise)
	e.Str(key)
	e.Str(fn)
	e.Outcome(out)
	return e.B
}

// DecodeFeedHeader decodes the FnFeed message's header; the entries
// follow in d.
func DecodeFeedHeader(b []byte) (replaying bool, count uint32, d Dec) {
	d = Dec{B: b}
	replaying = d.U8() == 1
	count = d.U32()
	return replaying, count, d
}

// FeedEntry decodes the next entry of an FnFeed message.
func (d *Dec) FeedEntry() FeedEntry {
	return FeedEntry{Kind: OpKind(d.U8()), Promise: d.U32(), Key: d.Bytes(), Fn: d.Bytes(), Outcome: d.Outcome()}
}
