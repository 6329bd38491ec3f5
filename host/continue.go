package host

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/store"
)

// Continue-as-new (skein.ContinueAsNew, abi.FnContinue): a run ends with
// status continued, and its successor (same module and workflow, the
// input given, an empty journal) is created in the same store commit.

// DefaultMaxJournalOps is Config.MaxJournalOps's default.
const DefaultMaxJournalOps = 50_000

// ContinuedRunID returns the id of the run that run id continues as:
// "{id}~2" for a run whose id has no "~N" suffix, else the suffix counted
// up ("sub~2" continues as "sub~3"). Run ids a caller gives cannot hold
// '~', so a successor's id never collides with one.
func ContinuedRunID(id string) string {
	root, n := chainPos(id)
	return root + "~" + strconv.Itoa(n+1)
}

// ContinuedFromID returns the id of the run that run id continued from
// by the scheme of ContinuedRunID ("sub~2" from "sub", "sub~3" from
// "sub~2"), or "" for an id without a "~N" suffix (N >= 2).
func ContinuedFromID(id string) string {
	root, n := chainPos(id)
	switch {
	case n < 2:
		return ""
	case n == 2:
		return root
	}
	return root + "~" + strconv.Itoa(n-1)
}

// chainPos splits a run id into the chain's first run and its position
// in the chain (1 for the first).
func chainPos(id string) (string, int) {
	i := strings.LastIndexByte(id, '~')
	if i < 0 {
		return id, 1
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n < 2 || strconv.Itoa(n) != id[i+1:] {
		return id, 1
	}
	return id[:i], n
}

// ContinuedError is Resolve's error for a promise of a run that has
// continued as new: the run will never run again, so nothing would
// receive the settlement. Promise ids belong to one run of a chain; the
// successor issues promises of its own. It wraps ErrTerminal (the HTTP
// API answers 409).
type ContinuedError struct {
	RunID     string // the run that continued
	Successor string // the run it continued as
}

func (e *ContinuedError) Error() string {
	return fmt.Sprintf("run %s has continued as new as run %s: its promises can no longer be settled (settle the successor's own promise instead)", e.RunID, e.Successor)
}

// Unwrap returns ErrTerminal.
func (e *ContinuedError) Unwrap() error { return ErrTerminal }

// successor is the run that rs's run continues as, with input: the same
// module and workflow, a new seed, starting at the run's virtual time (or
// now, if later, outside a simulation).
func (h *Host) successor(rs *runState, x *exec.Exec, input []byte) store.Run {
	start := x.S.VNow() + x.VSleep
	if h.sim == nil {
		start = max(start, time.Now().UnixNano())
	}
	return store.Run{ID: ContinuedRunID(rs.Run.ID), ModuleHash: rs.Run.ModuleHash, Workflow: rs.Run.Workflow,
		Input: input, Seed: mixSeed(rs.Run.Seed), StartTime: start, Status: store.RunPending, TraceParent: h.successorTraceparent(rs.Run)}
}

// mixSeed derives a successor's seed from its predecessor's: a pure
// function, so a chain is the same in every simulation of it.
func mixSeed(seed uint64) uint64 {
	seed += 0x9e3779b97f4a7c15
	z := seed
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return (z ^ (z >> 31)) | 1
}
