package host

import (
	"encoding/json"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host/internal/exec"
)

// Simulation makes a host run workflows in virtual time only, with every
// source of timing decided by a seed: what `skein check` and package
// skeintest run workflows under.
//
// Nothing waits in real time. Durable timers fire at their deadline of
// virtual time; each activity call, each step body and each wait inside a
// step body takes a seeded virtual duration; when several outcomes are due
// at the same virtual instant, the seed orders them. Outcomes are
// delivered one virtual instant at a time, in order, so one seed gives one
// schedule, exactly, every time. A crash is invisible in virtual time: an
// op that an earlier execution of the run already started keeps the end
// time it had, so a run replayed from any point of its journal must go on
// exactly as it did.
type Simulation struct {
	// Seed chooses the schedule of runs whose own seed was not set.
	Seed uint64
	// Activities are fakes by name, used instead of registered activities;
	// an activity that has neither returns JSON null. The HTTP activity
	// (activity.HTTPActivity) makes no requests here: unless faked, it fails.
	Activities map[string]activity.Func
	// StepTime bounds the virtual time a step body takes (uniform from 0);
	// default 100ms.
	StepTime time.Duration
	// ActivityTime bounds the virtual time an activity attempt takes
	// (uniform from 0); default 100ms.
	ActivityTime time.Duration
	// Promises settle the external promises at these keys (the part of
	// a promise's full id after "{run}.") with a fixed outcome, after a
	// seeded virtual delay. SettlePromises settles the others too, as a
	// check does (host/internal/exec/checkpromise.go): by schedule, with a value
	// generated from the promise's schema, with an error, or not at all.
	// Otherwise a promise waits for a Resolve from outside.
	Promises       map[string]PromiseValue
	SettlePromises bool
	// PromiseTime bounds the virtual delay before the simulation settles
	// a promise (uniform from 0); default 100ms.
	PromiseTime time.Duration
}

// PromiseValue is how a check settles an external promise: with Value
// (JSON), or failed with Error when it is not empty.
type PromiseValue struct {
	Value json.RawMessage
	Error string
}

// exec is s as the executions take it.
func (s Simulation) exec() exec.SimConfig {
	c := exec.SimConfig{Seed: s.Seed, Activities: s.Activities, StepTime: s.StepTime, ActivityTime: s.ActivityTime,
		SettlePromises: s.SettlePromises, PromiseTime: s.PromiseTime}
	if s.Promises != nil {
		c.Promises = make(map[string]exec.PromiseValue, len(s.Promises))
		for k, v := range s.Promises {
			c.Promises[k] = exec.PromiseValue(v)
		}
	}
	return c
}
