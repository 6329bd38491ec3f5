package host

import (
	"context"
	"log/slog"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/limit"
	"github.com/skeinrun/skein/host/internal/metrics"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// execHost is the host as its executions see it (exec.Host): a value
// with one pointer, so that the interface holds it without allocating,
// and a type of its own, so that the methods exec needs are not the
// host's public API.
type execHost struct{ h *Host }

// execHost is h as its executions see it.
func (h *Host) execHost() exec.Host { return execHost{h} }

// execConfig is the part of h's settings executions read, once the
// host is built (its store wrapped).
func (h *Host) execConfig() exec.Config {
	c := &h.cfg
	return exec.Config{Store: c.Store, Evict: exec.Evict(c.Evict), IdleThreshold: c.IdleThreshold,
		GuestOutput: c.GuestOutput, GuestOutputFor: c.GuestOutputFor, RemoteActivities: c.RemoteActivities,
		MaxOps: c.MaxOps, MaxTasks: c.MaxTasks, MaxChildren: c.MaxChildren, MaxChildDepth: c.MaxChildDepth,
		MaxJournalOps: c.MaxJournalOps, MaxPayloadBytes: c.MaxPayloadBytes, MaxExecutionTime: c.MaxExecutionTime,
		MaxExecutionCPU: c.MaxExecutionCPU, MaxRunWithoutYield: c.MaxRunWithoutYield, Hints: limit.Hints(c.LimitHint)}
}

func (e execHost) Config() *exec.Config                { return &e.h.xcfg }
func (e execHost) Log() *slog.Logger                   { return e.h.log }
func (e execHost) Counters(runID string) *metrics.Exec { return &e.h.metrics.Of(runID).Exec }
func (e execHost) Instance() func()                    { return e.h.metrics.Instance() }
func (e execHost) Activated(rs *exec.RunState) {
	if rs != nil {
		e.h.metrics.Of(rs.Run.ID).Activated(&rs.Activating)
	}
}
func (e execHost) Engine() engine.Engine      { return e.h.eng }
func (e execHost) Simulator() *exec.Simulator { return e.h.sim }

func (e execHost) Hooks() exec.Hooks {
	k := &e.h.hooks
	return exec.Hooks{Minting: k.minting, ReplayInline: k.replayInline, OnBody: k.onBody}
}

func (e execHost) Cancel(ctx context.Context, runID, reason string) (store.Run, error) {
	return e.h.Cancel(ctx, runID, reason)
}

func (e execHost) Drive(ctx context.Context, runID string) (store.Run, error) {
	return e.h.Drive(ctx, runID, DriveOptions{})
}

func (e execHost) DriveChild(base context.Context, rs *exec.RunState, id string) {
	e.h.driveChild(base, rs, id)
}

func (e execHost) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	return e.h.createRun(ctx, r)
}

func (e execHost) ChildRunID(parent, key string) string { return ChildRunID(parent, key) }
func (e execHost) NoteChildKey(parent, id, key string)  { e.h.noteChildKey(parent, id, key) }

func (e execHost) RunDepth(ctx context.Context, r store.Run, limit int) (int, error) {
	return e.h.runDepth(ctx, r, limit)
}

func (e execHost) Spawn(f func())                               { e.h.spawn(f) }
func (e execHost) EmitRecord(r store.Run, rec sched.Record)     { e.h.emitRecord(r, rec) }
func (e execHost) Activity(name string) activity.Func           { return e.h.activity(name) }
func (e execHost) SimActivity(name string) activity.Func        { return e.h.simActivity(name) }
func (e execHost) PayloadError(what string, n int) *limit.Error { return e.h.payloadError(what, n) }
func (e execHost) MemoryError(failure error, oom bool) error    { return e.h.memoryError(failure, oom) }

func (e execHost) CheckGrant(ctx context.Context, hash, activity string) error {
	return e.h.checkGrant(ctx, hash, activity)
}

func (e execHost) CancelCalls(ctx context.Context, rs *exec.RunState, reason string) {
	e.h.cancelCalls(ctx, rs, reason)
}
