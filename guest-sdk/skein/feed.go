package skein

import "github.com/skeinrun/skein/abi"

// The feed (abi/README.md, "feed"): on replay the host hands the running
// task the recorded outcomes of its next unnamed ops in one message, and
// opWith takes each from it without an op call. The task reports how
// many it took before its next other host call (flushFeed).

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
	// ask: the next op asks the host for a feed. It is set by a recorded
	// outcome and cleared by an empty feed, so a live execution asks
	// once, and a replay once per feed.
	ask bool
	off bool // the host said no recorded outcome is left in this execution
}

func init() { fed.ask = true }

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
func takeFed(tid uint32, kind abi.OpKind, fn string) (r abi.OpResult, ok bool) {
	if fed.off || !feedable(kind) {
		return r, false
	}
	if fed.left == 0 || fed.task != tid {
		if !fed.ask {
			return r, false
		}
		refill(tid)
		if fed.left == 0 {
			fed.ask = false
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

// settledOp notes an op the host answered: a recorded outcome means a
// replay, and the next op asks for a feed.
func settledOp(kind abi.OpKind, state uint8) {
	if state == abi.StateSettled && kind != abi.OpSpawn && kind != abi.OpFork && kind != abi.OpBranch {
		fed.ask = true
	}
}
