package exec

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/skeinrun/skein/abi"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// upgradeWorld is the world of a run replayed by check.Upgrade: recorded
// outcomes only. A new step body runs in the sandbox and settles at once
// (as on a resume; its body waits never end); a new activity call, timer,
// promise or child op starts nothing and never settles. The execution
// ends at its first live idle point, or at its first new op once the
// journal is consumed: from there the run would go on with new work.
type UpgradeWorld struct {
	Recorded map[string]bool // the journal's keys
	Clock    int64           // the latest virtual time of the journal
	First    *newOp          // the first op the new code issued that the journal does not record
}

type newOp struct{ Key, Kind, Fn string }

func (w *UpgradeWorld) effects(x *Exec) effects          { return &upgradeEffects{x: x, w: w} }
func (w *UpgradeWorld) ArmDeadline(Host, *RunState) bool { return true }
func (w *UpgradeWorld) SettlesParent() bool              { return false }
func (w *UpgradeWorld) ParentEnded(context.Context, Host, *RunState, []store.ParentEnd) {
	// An upgrade check ends no run.
}

// upgradeEffects are the effects of an execution replayed by
// check.Upgrade (upgradeWorld): none.
type upgradeEffects struct {
	x    *Exec
	w    *UpgradeWorld
	rand *rand.ChaCha8
}

func (f *upgradeEffects) now() int64                           { return f.w.Clock }
func (f *upgradeEffects) recorded(store.Outcome, sched.Record) {}
func (f *upgradeEffects) commits() bool                        { return false }

// unsettled: once the journal is consumed, a new op means the run would
// go on with new work (the check ends there); an activity call or child
// run starts nothing and waits.
func (f *upgradeEffects) unsettled(kind abi.OpKind, fn string, res sched.OpResult, replaying bool) (opAction, error) {
	switch {
	case res.New && !replaying:
		return opStop, nil
	case kind == abi.OpCall || kind == abi.OpChild:
		return opWait, nil
	}
	return opGo, nil
}
func (f *upgradeEffects) issued(key, kind, fn string, _ sched.TaskID) {
	if f.w.First == nil && !f.w.Recorded[key] {
		f.w.First = &newOp{Key: key, Kind: kind, Fn: fn}
	}
}
func (f *upgradeEffects) bodyStarted(string, int) {}
func (f *upgradeEffects) promised(string, []byte) {}
func (f *upgradeEffects) bodyNow() int64          { return f.w.Clock }
func (f *upgradeEffects) bodyRand(b []byte) {
	if f.rand == nil {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], f.x.rs.Run.Seed)
		copy(seed[8:], "skein-upgrade-check")
		f.rand = rand.NewChaCha8(seed)
	}
	f.rand.Read(b)
}
func (f *upgradeEffects) bodyWait(sched.TaskID, time.Duration, string) {}
func (f *upgradeEffects) backoff(*stepBody, string, int) time.Duration { return 0 }
func (f *upgradeEffects) stepEnded(sched.TaskID, sched.PromiseID, sched.Outcome) (bool, error) {
	return false, nil
}
func (f *upgradeEffects) armTimer(string, int64)                              {}
func (f *upgradeEffects) call(activityCall) error                             { return nil }
func (f *upgradeEffects) prepareChild(*store.Run)                             {}
func (f *upgradeEffects) child(context.Context, string, store.Run)            {}
func (f *upgradeEffects) cancelChild(context.Context, string, string, string) {}
func (f *upgradeEffects) idle(context.Context) error                          { return f.x.stop(Suspended, nil) }
func (f *upgradeEffects) hardCancels() bool                                   { return false }
func (f *upgradeEffects) spawned(sched.TaskID, sched.TaskID)                  {}
func (f *upgradeEffects) observed(sched.TaskID, sched.PromiseID, int)         {}
