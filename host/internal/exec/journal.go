package exec

import (
	"bytes"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// The conversions of an outcome between the guest's messages (abi), the
// scheduler's journal (sched.Record) and the store (store.Outcome): a
// journal field is added here and in those three types.

// toABI is an outcome as the guest receives it.
func ToABI(o sched.Outcome) abi.Outcome {
	if o.OK {
		return abi.Outcome{Status: abi.StatusOK, Data: o.Value}
	}
	return abi.Outcome{Status: abi.StatusError, Data: []byte(o.Err)}
}

// fromABI is an outcome the guest reports with status; ok is false for
// an unknown status (a panic is one only where panicOK).
func fromABI(status uint32, data []byte, panicOK bool) (sched.Outcome, bool) {
	switch status {
	case abi.StatusOK:
		return sched.Outcome{OK: true, Value: bytes.Clone(data)}, true
	case abi.StatusPanic:
		return errOutcome(string(data)), panicOK
	case abi.StatusError:
		return errOutcome(string(data)), true
	}
	return sched.Outcome{}, false
}

// toStore is a journal record as the store keeps it.
func ToStore(r sched.Record) store.Outcome {
	o := store.Outcome{Key: r.Key, Kind: r.Kind, Function: r.Function, Seq: r.Seq, Waited: r.Waited,
		Idle: r.Idle, WakeOrder: r.WakeOrder, VTime: r.VTime, Deadline: r.Deadline, Attempts: r.Attempts, UpdatedAt: time.Now()}
	switch {
	case r.Pending:
		o.Status = store.OutcomePending
	case r.Outcome.OK:
		o.Status, o.Value = store.OutcomeOK, r.Outcome.Value
	default:
		o.Status, o.Error = store.OutcomeError, r.Outcome.Err
	}
	return o
}

// fromStore is a stored outcome as a journal record.
func FromStore(o store.Outcome) sched.Record {
	r := sched.Record{Key: o.Key, Kind: o.Kind, Function: o.Function, Pending: o.Status == store.OutcomePending,
		Seq: o.Seq, Waited: o.Waited, Idle: o.Idle, WakeOrder: o.WakeOrder, VTime: o.VTime, Deadline: o.Deadline, Attempts: o.Attempts}
	if o.Status == store.OutcomeOK {
		r.Outcome = sched.Outcome{OK: true, Value: o.Value}
	} else if o.Status == store.OutcomeError {
		r.Outcome = sched.Outcome{Err: o.Error}
	}
	return r
}
