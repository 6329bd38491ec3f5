package check

import (
	"errors"
	"strings"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// skippedWork returns the first positional settled record (in settle
// order) that the execution never issued.
func skippedWork(outs []store.Outcome, s *sched.Sched) (store.Outcome, bool) {
	for _, o := range outs {
		if o.Status == store.OutcomePending || strings.HasPrefix(o.Key, "!") || sched.Named(o.Key) {
			continue
		}
		if !s.Issued(o.Key) {
			return o, true
		}
	}
	return store.Outcome{}, false
}

// classifyDivergence fills in res from a host.CodeMismatchError or a
// host.NondeterminismError.
func classifyDivergence(err error, outs []store.Outcome, res *UpgradeRun) {
	res.Error = err.Error()
	var cm *host.CodeMismatchError
	var nd *host.NondeterminismError
	switch {
	case errors.As(err, &cm):
		res.Break, res.Key, res.Recorded, res.New = BreakCodeMismatch, cm.Key, cm.Recorded, cm.Got
	case errors.As(err, &nd):
		res.Break, res.New = BreakNondeterminism, nd.Got
		for _, o := range outs {
			if o.Seq == nd.Seq && o.Status != store.OutcomePending {
				res.Key, res.Recorded = o.Key, o.Function
				break
			}
		}
	default:
		res.Break = BreakFailure
	}
}

// firstDifferentChoice returns the first choice (in a's order) that both
// histories made, differently: a Select both schedules ran before the
// op, with different outcomes. A choice only one of them made before the
// op does not count: up to the first differing choice both ran the same
// code, so one made a Select the other had not made yet only by timing.
func firstDifferentChoice(a, b []exec.SelectChoice) (Choice, bool) {
	for _, ca := range a {
		for _, cb := range b {
			if ca.Task == cb.Task && ca.Select == cb.Select && ca.Promise == cb.Promise && ca.Chose != cb.Chose {
				return Choice{Task: ca.Task, Select: ca.Select, Promise: ca.Promise, A: ca.Chose, B: cb.Chose}, true
			}
		}
	}
	return Choice{}, false
}
