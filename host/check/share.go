package check

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/store"
)

// Schedules that record the same log (the same ops, in the same order,
// with the same outcomes) and end the same way have the same crash
// points: a replay from each starts from the same records. The check
// replays them once, for the first such schedule, and the others share
// its findings (a sequential workflow, whose every schedule records the
// same journal, needs one schedule's replays instead of 200).

// replayShares maps a schedule's log to the replays of its crash points.
type replayShares struct {
	mu    sync.Mutex
	byLog map[[32]byte]*sharedReplays
}

// sharedReplays are the replays of one log, done by schedule k (which
// reports what they found); done is closed when they are.
type sharedReplays struct {
	done    chan struct{}
	k       int
	replays int
	err     error
}

// claim returns the replays of the log fp and whether the caller owns
// them (must run them and then call finish) or shares them (must wait
// for done).
func (s *replayShares) claim(fp [32]byte, k int) (*sharedReplays, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh, ok := s.byLog[fp]; ok {
		return sh, false
	}
	sh := &sharedReplays{done: make(chan struct{}), k: k}
	s.byLog[fp] = sh
	return sh, true
}

// finish publishes the owner's replays.
func (sh *sharedReplays) finish(replays int, err error) {
	sh.replays, sh.err = replays, err
	close(sh.done)
}

// sharedCrashReplays replays the run final from its crash points
// (replayCrashes), unless a schedule that recorded the same log does:
// then it waits for those replays and counts them as shared.
func (c *checker) sharedCrashReplays(ctx context.Context, res *scheduleResult, final store.Run, sim *exec.SimRun, journal []store.Outcome, cost time.Duration) error {
	sh, owner := c.shares.claim(logPrint(sim.Log, res.end), res.k)
	if !owner {
		select {
		case <-sh.done:
			res.crashPoints += len(journal) + 1
			res.replays += sh.replays
			res.shared += sh.replays
			return sh.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	before := res.replays
	err := c.replayCrashes(ctx, res, final, sim, journal, cost)
	sh.finish(res.replays-before, err)
	return err
}

// logPrint is the fingerprint of what a schedule recorded and how its run
// ended. Virtual times are left out: a workflow that observes them
// records what it saw in its values.
func logPrint(log []exec.SimRecord, end EndGroup) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	for _, r := range log {
		o := r.Out
		for _, s := range []string{o.Key, string(o.Kind), o.Function, string(o.Status), o.Error} {
			field([]byte(s))
		}
		field(o.Value)
	}
	for _, s := range []string{string(end.Status), end.Result, end.Error} {
		field([]byte(s))
	}
	return [32]byte(h.Sum(nil))
}
