package skein

import "github.com/skeinrun/skein/abi"

// The feed (abi/README.md, "feed"): on replay the host hands the running
// task the recorded outcomes of its next unnamed ops in one message, and
// opWith takes each from it without an op call. The task reports how
// many it took before its next other host call (flushFeed). A task asks
// for a feed after feedStreak recorded outcomes in a row from op.

// feedBuf holds the last feed; a taken entry's outcome aliases it until
// the next feed.
var feedBuf = make([]byte, 32<<10)

// fed is the state of the feed. Only the running task holds entries: a
// task reports its feed before it yields.
var fed struct {
	task uint32
	dec  abi.Dec // the entries not yet taken
	left uint32  // their number
	used uint32  // entries taken and not yet reported
	held bool    // the host gave entries that are not yet reported
	// asked: an op of this execution has asked for a feed. The first
	// eligible op asks, so a live execution learns at once that nothing
	// replays (off) and never asks again.
	asked bool
	off   bool // the host said no recorded outcome is left in this execution
}

// feedStreak is how many ops in a row a task must have had answered by
// the host with a recorded outcome before it asks for a feed: a feed
// costs a call to ask and one to report, which one or two ops do not
// repay (a task with a single step, as in a wide spawn).
const feedStreak = 2

// feedable reports whether an op of kind may be taken from a feed.
func feedable(kind abi.OpKind) bool {
	switch kind {
	case abi.OpStep, abi.OpCall, abi.OpSleep, abi.OpPromise, abi.OpChild:
		return true
	}
	return false
}

// takeFed returns the recorded outcome of the running task's next op, an
// unnamed op without options of kind and function fn, from the feed; ok
// is false when the feed has none for it, and the op goes to the host.
func takeFed(t *task, kind abi.OpKind, fn string) (r abi.OpResult, ok bool) {
	if fed.off || !feedable(kind) {
		return r, false
	}
	if fed.left == 0 || fed.task != t.id {
		if fed.asked && t.settled < feedStreak {
			return r, false
		}
		fed.asked = true
		refill(t.id)
		if fed.left == 0 {
			t.settled = 0 // nothing to feed here: ask again after another streak
			return r, false
		}
	}
	d := fed.dec
	e := d.FeedEntry()
	if d.Err != nil {
		panic("skein: bad feed message: " + d.Err.Error())
	}
	if e.Kind != kind || (kind != abi.OpSleep && kind != abi.OpPromise && string(e.Fn) != fn) {
		return r, false // not the recorded op: the host's op says how
	}
	fed.dec = d
	fed.left--
	fed.used++
	t.settled = feedStreak // a used-up feed asks for the next
	r = abi.OpResult{State: abi.StateSettled, Promise: e.Promise, Outcome: e.Outcome}
	if kind != abi.OpStep {
		r.Key = string(e.Key) // Step does not read the key
	}
	return r, true
}

// refill reports the entries taken from the task's feed and asks for the
// next ones.
func refill(tid uint32) {
	used := fed.used
	if fed.task != tid {
		flushFeed()
		used = 0
	}
	n := hostFeed(tid, used, ptr(feedBuf), uint32(len(feedBuf)))
	replaying, count, d := abi.DecodeFeedHeader(feedBuf[:n])
	if d.Err != nil {
		panic("skein: bad feed message: " + d.Err.Error())
	}
	fed.task, fed.dec, fed.left, fed.used, fed.held = tid, d, count, 0, count > 0
	fed.off = !replaying
}

// flushFeed reports the entries taken from the feed, as the protocol
// requires before any other host call, and drops the rest.
func flushFeed() {
	if !fed.held {
		return
	}
	hostFeed(fed.task, fed.used, nil, 0)
	fed.held, fed.left, fed.used = false, 0, 0
}

// settledOp counts the task's streak of ops the host answered with a
// recorded outcome (a replay), after which it asks for a feed.
func settledOp(t *task, kind abi.OpKind, state uint8) {
	switch {
	case !feedable(kind):
	case state == abi.StateSettled:
		t.settled++
	default:
		t.settled = 0
	}
}
