package exec

import (
	"context"
	"encoding/binary"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/sched"
)

// The feed (abi/README.md, "feed"): on replay, the host hands the
// running task the recorded outcomes of its next unnamed ops in one
// message, and the guest takes each without an op call. The host
// applies the ones the guest used when the guest reports them, with the
// scheduler's own Op, so every check of a replayed op still runs there.

// feedMax bounds the entries of one feed.
const feedMax = 256

// fedState is the last feed handed to a task, until the task reports
// how many of its entries it used.
type fedState struct {
	task    sched.TaskID
	entries []sched.Fed
}

// feed applies the entries of the task's last feed that it used, then,
// when the buffer can hold a header, hands it the next ones.
func (x *Exec) feed(ctx context.Context, stack []uint64) error {
	tid := sched.TaskID(u32(stack, 0))
	if tid == 0 || tid != x.S.Current() {
		return x.fail("feed: task %d is not the running task", tid)
	}
	if err := x.applyFed(tid, u32(stack, 1)); err != nil {
		return err
	}
	buf, capacity := u32(stack, 2), u32(stack, 3)
	stack[0] = 0
	if capacity < abi.FeedHeader {
		return nil
	}
	fed := x.S.Feed(tid, feedMax)
	msg := abi.AppendFeedHeader(x.out[:0], x.S.Replaying(), 0)
	n := 0
	for _, f := range fed {
		r := f.Rec
		kind, _ := abi.ParseOpKind(r.Kind)
		end := len(msg)
		if msg = abi.AppendFeedEntry(msg, kind, uint32(f.Promise), r.Key, r.Function, ToABI(r.Outcome)); len(msg) > int(capacity) {
			msg = msg[:end] // the entry does not fit: the feed ends before it
			break
		}
		n++
	}
	binary.LittleEndian.PutUint32(msg[1:], uint32(n))
	x.out = msg
	if n > 0 {
		x.fed = fedState{task: tid, entries: fed[:n]}
	}
	if !x.mem.Write(buf, msg) {
		return x.fail("guest passed an out-of-bounds buffer (offset %d, capacity %d)", buf, capacity)
	}
	stack[0] = uint64(len(msg))
	return nil
}

// applyFed issues, as op would, the first used entries of the task's
// last feed, which the guest took in order as unnamed ops without
// options. The scheduler checks each again; an answer other than the
// one fed means the guest broke the protocol, and fails the run.
func (x *Exec) applyFed(tid sched.TaskID, used uint32) error {
	fed := x.fed
	x.fed = fedState{}
	if used == 0 {
		return nil
	}
	if fed.task != tid {
		fed.entries = nil
	}
	if int(used) > len(fed.entries) {
		return x.fail("feed: task %d reports %d fed ops used, but its last feed gave it %d", tid, used, len(fed.entries))
	}
	if _, ok := x.nextOpts[tid]; ok {
		return x.fail("feed: task %d set op_options and then used fed ops; options apply to the next op issued with op", tid)
	}
	x.wd.yields.Add(1) // durable work, like op: progress for the no-yield limit
	for _, f := range fed.entries[:used] {
		kind, _ := abi.ParseOpKind(f.Rec.Kind)
		if err := x.countOp(opArgs{tid: tid, kind: kind, fn: f.Rec.Function}); err != nil {
			return err
		}
		res, err := x.S.OpFed(tid, f)
		if err != nil {
			return x.schedErr(err)
		}
		if !res.Settled || res.Key != f.Rec.Key || res.Promise != f.Promise {
			return x.fail("feed: task %d used the fed op at key %q, but the host no longer answers it so (another host call between the feed and its use?)", tid, f.Rec.Key)
		}
		x.fx.issued(res.Key, f.Rec.Kind, f.Rec.Function, tid)
	}
	x.counters().FedOps.Add(uint64(used))
	return nil
}
