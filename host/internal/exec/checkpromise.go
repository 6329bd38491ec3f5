package exec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/internal/shape"
)

// In a check nobody settles a run's external promises, so the check
// settles them itself: each promise the workflow issues is settled after a
// seeded virtual delay, with the outcome check.Options.Promises gives for
// its key, or else, by schedule, with a value generated from the schema
// the promise recorded, with an error, or not at all (a deadline the
// workflow races it with wins, or the run suspends). So the code after
// every promise is explored by default, and the report says how each
// promise was settled in each schedule.

// PromiseValue is host.PromiseValue.
type PromiseValue struct {
	Value json.RawMessage
	Error string
}

// promiseMode is how a check settles a promise the options do not name.
type promiseMode int

const (
	promiseValue   promiseMode = iota // a value generated from the promise's schema
	promiseError                      // failed with errCheckPromise
	promisePending                    // never: a racing deadline wins, or the run suspends
	promiseModes
)

// errCheckPromise is the error text of a promise a check fails.
const errCheckPromise = "skein check: the promise was settled with an error"

// promiseGenerated starts the words of a promise settled with a value
// generated from its schema; the value follows.
const PromiseGenerated = "a value generated from its schema: "

// promised settles the promise at key of the simulated run after a seeded
// delay, as Simulation.Promises and SettlePromises say; an earlier execution's choice of its end
// time is kept (simRun.schedule), so a replay settles it alike.
func (f *simEffects) promised(key string, schema []byte) {
	if f.x.rs.promises[key] {
		return // already armed in this execution
	}
	out, how, ok := f.promiseOutcome(key, schema)
	f.sim.notePromise(key, how)
	if !ok {
		return
	}
	id := "promise:" + key
	f.sim.schedule(id, time.Duration(f.sim.Frac(id)*float64(f.cfg.PromiseTime)), sched.Completion{Key: key, Outcome: out})
}

// promiseOutcome is the outcome the check gives the promise at key, with
// words for the report; ok is false for a promise left pending.
func (f *simEffects) promiseOutcome(key string, schema []byte) (out sched.Outcome, how string, ok bool) {
	if v, named := f.cfg.Promises[key]; named {
		if v.Error != "" {
			return errOutcome(v.Error), fmt.Sprintf("error %q (given)", v.Error), true
		}
		return sched.Outcome{OK: true, Value: v.Value}, "value " + string(v.Value) + " (given)", true
	}
	if !f.cfg.SettlePromises {
		return sched.Outcome{}, "left pending", false
	}
	switch f.sim.promiseMode(key) {
	case promiseValue:
		v := generateValue(rand.New(rand.NewPCG(f.sim.seed, Mix(f.sim.seed, "value:"+key))), schema)
		return sched.Outcome{OK: true, Value: v}, PromiseGenerated + shortJSON(v), true
	case promiseError:
		return errOutcome(errCheckPromise), "error", true
	}
	return sched.Outcome{}, "left pending", false
}

// promiseMode is the mode of a promise the options do not name: the
// schedules take the modes in turn (shifted per key), so every mode
// occurs in every three consecutive schedules.
func (r *SimRun) promiseMode(key string) promiseMode {
	return promiseMode((uint64(r.Index) + Mix(0, key)) % uint64(promiseModes))
}

// notePromise records how the promise at key was settled, for the report.
func (r *SimRun) notePromise(key, how string) {
	if r.Promised == nil {
		r.Promised = map[string]string{}
	}
	if _, ok := r.Promised[key]; !ok {
		r.Promised[key] = how
	}
}

// generateValue returns a plain JSON value the schema admits
// (shape.Example); null for a promise without a schema.
func generateValue(r *rand.Rand, schema []byte) []byte {
	if len(bytes.TrimSpace(schema)) == 0 {
		return []byte("null")
	}
	return shape.Example(schema, r)
}

// shortJSON is v for a report line, cut at 60 bytes.
func shortJSON(v []byte) string {
	if len(v) > 60 {
		return string(v[:57]) + "..."
	}
	return string(v)
}
