package exec

import (
	"cmp"
	"time"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// The timeline's data (docs/ui.md): when each op was first issued and when
// its settlement was recorded (store.Outcome.StartedAt, SettledAt), the
// attempts of steps under a retry policy or timeout and of retried
// activity calls, and the idle points where the run's instance was dropped
// and replayed (store.Attempt). All of it comes from the host's wall
// clock and goes to the store only: the guest never sees it, a replay
// never reads it, and it takes no part in a run's identity.

// opIssued notes the wall-clock time of an op this execution issues for
// the first time (not a replayed one); its records carry it.
func (x *Exec) opIssued(key string) {
	if !x.fx.commits() {
		return
	}
	if x.opStarts == nil {
		x.opStarts = map[string]int64{}
	}
	x.opStarts[key] = time.Now().UnixNano()
}

// stamp sets the timeline times of a record this execution makes: its
// op's start, when this execution issued it, and its settlement's time.
func (x *Exec) stamp(o *store.Outcome, r sched.Record) {
	if r.Seq > x.LastSeq {
		x.LastSeq = r.Seq
	}
	o.StartedAt = x.opStarts[r.Key]
	if !r.Pending {
		o.SettledAt = time.Now().UnixNano()
		delete(x.opStarts, r.Key)
		if x.fx.commits() { // op latency (host/internal/metrics): from the op's issue, in this execution or an earlier one
			x.counters().OpSettled(r.Kind, r.Outcome.OK, cmp.Or(o.StartedAt, x.rs.issued[r.Key]), o.SettledAt)
		}
	}
}

// bodyAttempt queues the start or the end of an attempt of a step body
// under a retry policy or timeout.
func (x *Exec) bodyAttempt(key string, n int, start, end int64, err string) {
	if x.rs != nil && x.fx.commits() {
		x.rs.attempt(key, n, start, end, err)
	}
}

// attempt queues an attempt of the op at key for the next commit: its
// start (end 0) or its end with its error (start 0); the store keeps
// what it knows already of the other.
func (rs *RunState) attempt(key string, n int, start, end int64, err string) {
	rs.Batch.Attempts = append(rs.Batch.Attempts, store.RunAttempt{RunID: rs.Run.ID,
		Attempt: store.Attempt{Key: key, N: n, Start: start, End: end, Error: store.CleanText(err)}})
}

// lateAttempt queues an attempt from an activity's goroutine; the next
// flush takes it.
func (rs *RunState) lateAttempt(a store.Attempt) {
	rs.Mu.Lock()
	a.Error = store.CleanText(a.Error)
	rs.Late = append(rs.Late, store.RunAttempt{RunID: rs.Run.ID, Attempt: a})
	rs.Mu.Unlock()
}

// takeLate moves the attempts of activity goroutines into the batch.
func (rs *RunState) takeLate() {
	rs.Mu.Lock()
	rs.Batch.Attempts = append(rs.Batch.Attempts, rs.Late...)
	rs.Late = nil
	rs.Mu.Unlock()
}

// dropped records that the run's instance is dropped now (evicted or
// suspended) with lastSeq settled records in its journal.
func (rs *RunState) Dropped(lastSeq int64) {
	rs.attempt(store.IdleKey, int(lastSeq), time.Now().UnixNano(), 0, "")
}

// replaying records that an execution starts now by replaying the
// journal outs: the end of the drop recorded at its last settled record.
// It also keeps when each op still pending was issued, for the op
// latency of its settlement.
func (rs *RunState) Replaying(outs []store.Outcome) {
	var last int64
	clear(rs.issued)
	for i := range outs {
		last = max(last, outs[i].Seq)
		if o := &outs[i]; o.Status == store.OutcomePending && o.StartedAt != 0 {
			if rs.issued == nil {
				rs.issued = map[string]int64{}
			}
			rs.issued[o.Key] = o.StartedAt
		}
	}
	rs.attempt(store.IdleKey, int(last), 0, time.Now().UnixNano(), "")
}

// maxSeq is the highest settle sequence of recs.
func maxSeq(recs []sched.Record) int64 {
	var m int64
	for i := range recs {
		m = max(m, recs[i].Seq)
	}
	return m
}
