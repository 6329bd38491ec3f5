package check

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// The ways a run can break under a new module (UpgradeRun.Break).
const (
	// BreakCodeMismatch: the new code calls another function at a recorded
	// key; a resume fails the run as diverged with a
	// host.CodeMismatchError.
	BreakCodeMismatch = "code mismatch"
	// BreakNondeterminism: the new code departs from the recorded order;
	// a resume fails the run as diverged with a
	// host.NondeterminismError.
	BreakNondeterminism = "nondeterminism"
	// BreakSkipped: the new code ends without reaching a recorded
	// positional op after issuing ops the journal does not record (a
	// positional insertion shifted the keys): a resume meets no error,
	// and the recorded work would be done again under new keys.
	BreakSkipped = "skipped recorded work"
	// BreakFailure: the replay failed (the guest trapped, misused the
	// scheduler, or hit a limit); a resume fails the run.
	BreakFailure = "failure"
)

// UpgradeReport is what Upgrade found.
type UpgradeReport struct {
	Module    string            // hash of the new module
	Workflows []string          // the workflows whose runs were checked
	Statuses  []store.RunStatus // the run statuses checked
	// Runs lists every run checked, by id.
	Runs []UpgradeRun
	// Broken counts the runs that would break.
	Broken  int
	Elapsed time.Duration
}

// UpgradeRun is what replaying one run against the new module met.
type UpgradeRun struct {
	ID       string
	Workflow string
	Status   store.RunStatus // as stored
	Ops      int             // records in its journal
	// End, for a clean replay: "continues" (the journal is consumed and
	// the new code would go on from there) or "completes" (the new code
	// ends the run within its journal).
	End string `json:",omitempty"`
	// Break is "" for a clean replay, else one of the Break constants.
	Break string `json:",omitempty"`
	// Key is the first key that breaks; Recorded the function the journal
	// records there; New what the new code does instead (the function it
	// calls, or the host.NondeterminismError's account). Error is the error a
	// resume would meet (or the account of the skipped work).
	Key      string `json:",omitempty"`
	Recorded string `json:",omitempty"`
	New      string `json:",omitempty"`
	Error    string `json:",omitempty"`
}

// OK reports whether the run replays cleanly.
func (r UpgradeRun) OK() bool { return r.Break == "" }

// OK reports whether every run replays cleanly.
func (r *UpgradeReport) OK() bool { return r.Broken == 0 }

// Summary is the one-line result, e.g. "upgrade check: 40 runs of
// provision_vm (suspended, running): 28 replay cleanly, 12 WOULD BREAK".
func (r *UpgradeReport) Summary() string {
	st := make([]string, len(r.Statuses))
	for i, s := range r.Statuses {
		st[i] = string(s)
	}
	verdict := "0 would break"
	if r.Broken > 0 {
		verdict = fmt.Sprintf("%d WOULD BREAK", r.Broken)
	}
	return fmt.Sprintf("upgrade check: %d runs of %s (%s): %d replay cleanly, %s",
		len(r.Runs), strings.Join(r.Workflows, ", "), strings.Join(st, ", "), len(r.Runs)-r.Broken, verdict)
}

// Details writes one line per run (with brokenOnly, only the broken
// ones); a broken run is followed by the error a resume would meet.
func (r *UpgradeReport) Details(w io.Writer, brokenOnly bool) {
	for _, run := range r.Runs {
		head := fmt.Sprintf("%s (%s, %s, %d records)", run.ID, run.Workflow, run.Status, run.Ops)
		switch {
		case run.OK() && !brokenOnly:
			fmt.Fprintf(w, "ok     %s: replays cleanly, %s\n", head, run.End)
		case !run.OK() && run.Key != "":
			fmt.Fprintf(w, "BREAKS %s: %s at key %q: recorded %q, the new code: %s\n  %s\n", head, run.Break, run.Key, run.Recorded, run.New, run.Error)
		case !run.OK():
			fmt.Fprintf(w, "BREAKS %s: %s\n  %s\n", head, run.Break, run.Error)
		}
	}
}
