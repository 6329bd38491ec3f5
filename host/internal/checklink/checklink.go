// Package checklink is the one door from package host/check, the
// checker, into the internals of the host it runs its schedules on.
// Nothing but host/check may use it (it is internal to host/ anyway).
//
// The checker makes a Link, puts it in the context it passes to host.New
// (With), and host.New, finding it there (From), takes the test hooks from
// it and fills in the rest: what the checker needs of that one host and
// nothing else. There is no package-level state: a Link belongs to one
// host, as a context's values belong to one call (wazero's experimental
// package passes its listeners the same way). RATIONALE.md, "The checker
// reaches the host through a link in the context", says why.
package checklink

import (
	"context"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/modules"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// Link is what the checker and the host it made share.
type Link struct {
	// Set by the checker before host.New: the checker's own tests set
	// these to make a host misbehave in ways a check must catch.

	// Minting is the scheduler's id policy (zero: the host's own).
	Minting sched.Minting
	// ReplayInline makes a replay hand every recorded value back at once.
	ReplayInline bool

	// Filled in by host.New.

	// Sim is the host's simulator (Config.Simulation; nil without one):
	// the checker presets each run's seeded schedule in it and reads what
	// the run recorded.
	Sim *exec.Simulator
	// NewRun creates a pending run (its seed and start time as given)
	// unless a run with its id exists, and returns the stored run.
	NewRun func(ctx context.Context, r store.Run) (store.Run, bool, error)
	// Compiled returns the compiled module of a deployed module, with a
	// reference the caller gives back with Release.
	Compiled func(ctx context.Context, hash string) (*modules.Module, error)
	Release  func(*modules.Module)
	// Upgrade runs one execution of run in the upgrade world w with the
	// module cm, from the records of its journal, as a resume would, and
	// returns it ended: its State and Failure say how (the upgrade
	// check, host/check/upgrade.go).
	Upgrade func(ctx context.Context, cm *modules.Module, run store.Run, recorded []sched.Record, w *exec.UpgradeWorld) *exec.Exec
}

// key is the context key of a Link.
type key struct{}

// With returns ctx carrying l, for host.New.
func With(ctx context.Context, l *Link) context.Context { return context.WithValue(ctx, key{}, l) }

// From returns the Link ctx carries, or nil.
func From(ctx context.Context) *Link {
	l, _ := ctx.Value(key{}).(*Link)
	return l
}
