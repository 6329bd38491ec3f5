package store

import (
	"math"
	"slices"
)

// RunOrder is a sort key of Runs (RunFilter.Order).
type RunOrder string

// The orders of Runs: by ID (the default), by creation time, by end time
// and by duration (ended runs first, the others after them in either
// direction), and by status in lifecycle order (RunStatuses).
const (
	OrderID       RunOrder = ""
	OrderCreated  RunOrder = "created"
	OrderEnded    RunOrder = "ended"
	OrderDuration RunOrder = "duration"
	OrderStatus   RunOrder = "status"
)

// RunOrders lists the orders of Runs.
var RunOrders = []RunOrder{OrderID, OrderCreated, OrderEnded, OrderDuration, OrderStatus}

// RunStatuses lists the run statuses in lifecycle order: the order of
// OrderStatus.
var RunStatuses = []RunStatus{RunPending, RunRunning, RunSuspended,
	RunCompleted, RunFailed, RunDiverged, RunCanceled, RunContinued, RunReset}

// NotEndedKey is the sort key of a run that has not ended (not
// Terminal) under OrderEnded and OrderDuration: it sorts after every
// ended run, ascending or descending.
func NotEndedKey(desc bool) int64 {
	if desc {
		return math.MinInt64
	}
	return math.MaxInt64
}

// RunSortKey is r's key under order o (the ID breaks ties): its
// creation time (unix ns); its end time (UpdatedAt of a Terminal run)
// or its duration from creation to end (ns), NotEndedKey(desc) for a
// run that has not ended; the index of its status in RunStatuses. It is
// 0 for OrderID.
func RunSortKey(r Run, o RunOrder, desc bool) int64 {
	switch o {
	case OrderCreated:
		return r.CreatedAt.UnixNano()
	case OrderEnded, OrderDuration:
		if !r.Status.Terminal() {
			return NotEndedKey(desc)
		}
		if o == OrderEnded {
			return r.UpdatedAt.UnixNano()
		}
		return r.UpdatedAt.UnixNano() - r.CreatedAt.UnixNano()
	case OrderStatus:
		return int64(slices.Index(RunStatuses, r.Status))
	}
	return 0
}
