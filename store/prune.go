package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Retention (docs/operations.md, "Retention"): runs that ended are
// deleted, with everything that belongs to them, by PruneRuns (the
// host's pruner) and DeleteRun (one run, by hand).
//
// A run may be pruned at a horizon (unix ns) when it ended (its status is
// Terminal) before it (UpdatedAt, the time of its end) and nothing that
// has not ended needs it:
//   - its parent, if stored, has ended (a child of a live parent is kept:
//     the parent waits for its result);
//   - none of its child runs is live (a parent is kept while a child
//     runs: the child delivers its result to it);
//   - it is not the run of a schedule's latest started slot
//     (Schedule.LastFired), nor of its chain: the scheduler creates that
//     run when it finds it missing (a worker that died between deciding
//     a slot and starting its run), so it stays until the schedule fires
//     again;
//   - it is not part of a continue-as-new chain (ChainRoot) that is
//     kept: a chain goes whole, when its last run ended before the
//     horizon and every run of it may go by the two rules above. A chain
//     is pruned by the end of its last run, so that its history reads
//     from its first run for as long as the chain is kept.
//
// DeleteRun applies the same rules to one run, without a horizon: a run
// that has not ended, a child of a live parent, a parent of a live child
// and any run of a chain whose last run has not ended are refused.

// DefaultPruneBatch is the number of runs one PruneRuns call of the
// host's pruner deletes at most, each call one short transaction.
const DefaultPruneBatch = 500

// PruneResult is the answer of PruneRuns.
type PruneResult struct {
	// IDs are the runs deleted (with dryRun: that would be), in the
	// order they were chosen: by status (TerminalStatuses), then end
	// time, then ID, each chain's runs together.
	IDs []string
	// More reports that the limit stopped the batch: more runs may be
	// prunable at the same horizon.
	More bool
}

// ErrRunNeeded is returned (wrapped, by a *KeptError) by DeleteRun for a
// run that has not ended or that a run that has not ended still needs.
var ErrRunNeeded = errors.New("the run is still needed")

// KeptError is DeleteRun's refusal: it names the run and the rule that
// keeps it, and wraps ErrRunNeeded.
type KeptError struct {
	RunID string
	Rule  string // why it is kept, as a sentence
}

func (e *KeptError) Error() string {
	return fmt.Sprintf("run %s cannot be deleted: %s", e.RunID, e.Rule)
}

// Unwrap returns ErrRunNeeded.
func (e *KeptError) Unwrap() error { return ErrRunNeeded }

// PruneStore deletes ended runs (see the rules above). Every backend
// deletes a run with all that belongs to it: its outcomes, settlements,
// attempts, lease history and activity tasks.
type PruneStore interface {
	// PruneRuns deletes the runs of namespace ns ("": of every
	// namespace) that may be pruned at before (unix ns), up to limit of
	// them in one transaction (<= 0: all), and returns them; with dryRun it deletes nothing and returns what it would
	// delete. A chain is deleted whole in one call, so a call may delete
	// more than limit runs when a chain is longer than that.
	PruneRuns(ctx context.Context, ns string, before int64, limit int, dryRun bool) (PruneResult, error)
	// DeleteRun deletes one run that has ended, with all that belongs to
	// it. An unknown run fails with ErrNotFound; a run the rules keep
	// with a *KeptError (ErrRunNeeded) naming the rule.
	DeleteRun(ctx context.Context, id string) error
}

// PlanPrune chooses the batch of a PruneRuns call from the n runs it
// found prunable (n <= limit; limit <= 0: no limit): units are their
// chains (each chain's runs by ID), in the order of their first run
// found. It takes whole chains while the batch stays within limit (the
// first one always), and sets More when the limit stopped it or the
// runs found reached it. Every backend calls it, so they agree.
func PlanPrune(n, limit int, units [][]string) PruneResult {
	var res PruneResult
	for _, u := range units {
		if limit > 0 && len(res.IDs) > 0 && len(res.IDs)+len(u) > limit {
			res.More = true
			break
		}
		res.IDs = append(res.IDs, u...)
	}
	if limit > 0 && n >= limit {
		res.More = true
	}
	return res
}

// TerminalStatuses lists the statuses that are Terminal, in the order of
// RunStatuses.
func TerminalStatuses() []RunStatus {
	var ts []RunStatus
	for _, s := range RunStatuses {
		if s.Terminal() {
			ts = append(ts, s)
		}
	}
	return ts
}

// ChainRoot returns the id of the first run of the continue-as-new chain
// run id belongs to, by the scheme of host.ContinuedRunID: id without its
// "~N" suffix (N a number from 2 without leading zeros, of at most 18
// digits), or id itself. The SQL stores compute the same in their runs'
// chain column.
func ChainRoot(id string) string {
	i := strings.LastIndexByte(id, '~')
	if i < 0 {
		return id
	}
	n := id[i+1:]
	if n == "" || len(n) > 18 || n[0] == '0' || n == "1" || strings.Trim(n, "0123456789") != "" {
		return id
	}
	return id[:i]
}

// Relatives are what the rules of deletion need to know of a run: its
// parent, whether a child of it is live, its chain.
type Relatives struct {
	Parent    *Run   // the stored parent; nil for none (or one deleted)
	LiveChild string // a child run that has not ended; "" for none
	// ChainEnd is the last run of its chain (the run itself when it is
	// alone or last).
	ChainEnd Run
	// SlotOf names the schedule whose latest started slot's run is the
	// first run of its chain; "" for none.
	SlotOf string
}

// ScheduleRunID returns the id of the run the schedule of qualified name
// starts for a slot: "sched:{name}@{slot in UTC, RFC 3339}" in the
// schedule's namespace (host.ScheduleRunID).
func ScheduleRunID(name string, slot time.Time) string {
	return ScheduleRunIDPrefix(name) + slot.UTC().Format(time.RFC3339)
}

// SlotRuns returns the ids of the runs of the schedules' latest started
// slots, each with the name of its schedule: the runs the rules keep.
func SlotRuns(scheds []Schedule) map[string]string {
	ids := make(map[string]string, len(scheds))
	for _, sc := range scheds {
		if sc.LastFired != 0 {
			ids[ScheduleRunID(sc.Name, time.Unix(0, sc.LastFired))] = sc.Name
		}
	}
	return ids
}

// KeepReason returns why run r may not be deleted by DeleteRun (a
// *KeptError), or nil when it may.
func KeepReason(r Run, rel Relatives) error {
	keep := func(format string, args ...any) error {
		return &KeptError{RunID: r.ID, Rule: fmt.Sprintf(format, args...)}
	}
	switch {
	case !r.Status.Terminal():
		return keep("it has not ended (status %s): only a run that has ended is deleted", r.Status)
	case rel.Parent != nil && !rel.Parent.Status.Terminal():
		return keep("its parent run %s has not ended (status %s): a child run is kept while its parent runs", rel.Parent.ID, rel.Parent.Status)
	case rel.LiveChild != "":
		return keep("its child run %s has not ended: a parent run is kept while a child of it runs", rel.LiveChild)
	case rel.SlotOf != "":
		return keep("it is the run of schedule %s's latest slot, which the scheduler would start again: it may go once the schedule fires again", rel.SlotOf)
	case !rel.ChainEnd.Status.Terminal():
		return keep("the last run of its continue-as-new chain, %s, has not ended (status %s): a chain is kept whole while it runs",
			rel.ChainEnd.ID, rel.ChainEnd.Status)
	}
	return nil
}

// ChainEnd returns the last run of a chain from its runs (any order,
// at least one): the one furthest along it ("r~3" after "r~2" after
// "r").
func ChainEnd(chain []Run) Run {
	end, at := chain[0], chainPos(chain[0].ID)
	for _, r := range chain[1:] {
		if n := chainPos(r.ID); n > at {
			end, at = r, n
		}
	}
	return end
}

// chainPos is the position of run id in its chain: N of its "~N"
// suffix (ChainRoot), 1 for the first run.
func chainPos(id string) int {
	root := ChainRoot(id)
	if root == id {
		return 1
	}
	n, _ := strconv.Atoi(id[len(root)+1:]) // ChainRoot checked it: at most 18 digits
	return n
}
