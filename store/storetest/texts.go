package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// badTexts are the texts no store can hold: a NUL byte, and bytes that
// are not UTF-8.
var badTexts = map[string]string{"nul": "a\x00b", "utf8": "a\xffb"}

// textWrite is one write that puts bad into one text field.
type textWrite struct {
	what  string
	write func(t *testing.T, s store.Store, bad string) error
}

// testTexts: every write of a text (ids, keys, names, kinds, functions,
// owners, errors, reasons) with a NUL byte or bytes that are not UTF-8
// fails with ErrInvalidText naming the field, on every backend, and
// applies nothing; a read that names such a text finds nothing. A
// PostgreSQL text column can hold neither, and a run must behave the
// same on every backend.
func testTexts(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("tx-run"))
	queueTask(t, s, newTask("tx-run", "t1", "charge"))
	for name, bad := range badTexts {
		for _, w := range textWrites() {
			err := w.write(t, s, bad)
			if !errors.Is(err, store.ErrInvalidText) {
				t.Errorf("%s with %s: %v; want ErrInvalidText", w.what, name, err)
				continue
			}
			var te *store.TextError
			if !errors.As(err, &te) || te.Text == "" || te.At < 0 || te.At >= len(te.Text) {
				t.Errorf("%s with %s: %v does not name the text (%+v)", w.what, name, err, te)
			}
		}
		checkNothingStored(t, s)
		checkBadReads(t, s, bad)
	}
}

// textWrites lists a write for every text field of every write method.
func textWrites() []textWrite {
	var ws []textWrite
	for _, f := range []string{"id", "module", "workflow", "error", "parent"} {
		ws = append(ws, textWrite{"CreateRun " + f, func(t *testing.T, s store.Store, bad string) error {
			_, _, err := s.CreateRun(t.Context(), runWith("tx-new", f, bad))
			return err
		}})
	}
	ws = append(ws,
		textWrite{"CreateClaimedRun owner", func(t *testing.T, s store.Store, bad string) error {
			_, _, err := s.CreateClaimedRun(t.Context(), testRun("tx-new"), bad, time.Now().UnixNano(), time.Minute)
			return err
		}},
		textWrite{"PutModule name", func(t *testing.T, s store.Store, bad string) error {
			return s.PutModule(t.Context(), testModule(bad, 77))
		}},
		textWrite{"PutModule workflow", func(t *testing.T, s store.Store, bad string) error {
			m := testModule("tx-mod", 78)
			m.Workflows = []string{"alpha", bad}
			return s.PutModule(t.Context(), m)
		}},
		textWrite{"Settle error", func(t *testing.T, s store.Store, bad string) error {
			return s.Settle(t.Context(), store.Settlement{RunID: "tx-run", Key: "p", Status: store.OutcomeError, Error: bad})
		}},
		textWrite{"RequestCancel reason", func(t *testing.T, s store.Store, bad string) error {
			_, err := s.RequestCancel(t.Context(), "tx-run", bad)
			return err
		}},
		textWrite{"ClaimRun owner", func(t *testing.T, s store.Store, bad string) error {
			_, err := s.ClaimRun(t.Context(), "tx-run", bad, time.Now().UnixNano(), time.Minute)
			return err
		}},
		textWrite{"ClaimRuns owner", func(t *testing.T, s store.Store, bad string) error {
			_, err := s.ClaimRuns(t.Context(), bad, time.Now().UnixNano(), time.Minute, 10)
			return err
		}},
		textWrite{"ClaimTasks owner", func(t *testing.T, s store.Store, bad string) error {
			_, err := s.ClaimTasks(t.Context(), store.TaskClaim{Owner: bad, Names: []string{"charge"}, Max: 1, Now: taskNow, TTL: taskTTL})
			return err
		}},
		textWrite{"ClaimTasks name", func(t *testing.T, s store.Store, bad string) error {
			_, err := s.ClaimTasks(t.Context(), store.TaskClaim{Owner: "w1", Names: []string{bad}, Max: 1, Now: taskNow, TTL: taskTTL})
			return err
		}},
		textWrite{"HeartbeatTask owner", func(t *testing.T, s store.Store, bad string) error {
			_, err := s.HeartbeatTask(t.Context(), "tx-run", "t1", 1, bad, taskNow, taskTTL, nil)
			return err
		}},
		textWrite{"EndTask retry error", func(t *testing.T, s store.Store, bad string) error {
			return s.EndTask(t.Context(), store.TaskEnd{RunID: "tx-run", Key: "t1", Attempt: 1, Now: taskNow, Retry: &store.TaskRetry{Error: bad}})
		}},
		textWrite{"EndTask settlement error", func(t *testing.T, s store.Store, bad string) error {
			return s.EndTask(t.Context(), store.TaskEnd{RunID: "tx-run", Key: "t1", Attempt: 1, Now: taskNow,
				Settle: &store.Settlement{Status: store.OutcomeError, Error: bad, Attempts: 1}})
		}},
		textWrite{"CancelTasks reason", func(t *testing.T, s store.Store, bad string) error {
			return s.CancelTasks(t.Context(), "tx-run", bad)
		}},
		textWrite{"CreateSchedule module", func(t *testing.T, s store.Store, bad string) error {
			sc := testSchedule("tx-sched")
			sc.Module = bad
			_, err := s.CreateSchedule(t.Context(), sc)
			return err
		}},
		textWrite{"CreateHook workflow", func(t *testing.T, s store.Store, bad string) error {
			_, err := s.CreateHook(t.Context(), store.Hook{Name: "tx-hook", Module: "m", Workflow: bad})
			return err
		}},
	)
	return append(ws, batchTextWrites()...)
}

// batchTextWrites puts bad into every text a Commit writes, one batch
// each; every batch also holds an innocent outcome, which must not be
// applied.
func batchTextWrites() []textWrite {
	outcome := func(f string) func(bad string) store.Batch {
		return func(bad string) store.Batch {
			o := settledOK("tx-2", 2, `2`)
			switch f {
			case "key":
				o.Key = bad
			case "kind":
				o.Kind = bad
			case "function":
				o.Function = bad
			case "error":
				o.Status, o.Value, o.Error = store.OutcomeError, nil, bad
			}
			return store.Batch{Outcomes: []store.RunOutcome{ro("tx-run", o)}}
		}
	}
	batches := map[string]func(bad string) store.Batch{
		"outcome key":      outcome("key"),
		"outcome kind":     outcome("kind"),
		"outcome function": outcome("function"),
		"outcome error":    outcome("error"),
		"run error": func(bad string) store.Batch {
			r := testRun("tx-run")
			r.Status, r.Error = store.RunFailed, bad
			return store.Batch{Runs: []store.Run{r}}
		},
		"created run workflow": func(bad string) store.Batch {
			return store.Batch{Creates: []store.Run{runWith("tx-new", "workflow", bad)}}
		},
		"settlement error": func(bad string) store.Batch {
			return store.Batch{Settlements: []store.Settlement{{RunID: "tx-run", Key: "p", Status: store.OutcomeError, Error: bad}}}
		},
		"task name": func(bad string) store.Batch {
			return store.Batch{Tasks: []store.Task{newTask("tx-run", "t9", bad)}}
		},
		"attempt error": func(bad string) store.Batch {
			return store.Batch{Attempts: []store.RunAttempt{{RunID: "tx-run", Attempt: store.Attempt{Key: "1", N: 1, Error: bad}}}}
		},
	}
	var ws []textWrite
	for what, batch := range batches {
		ws = append(ws, textWrite{"Commit " + what, func(t *testing.T, s store.Store, bad string) error {
			b := batch(bad)
			b.Outcomes = append(b.Outcomes, ro("tx-run", settledOK("tx-1", 1, `1`)))
			return s.Commit(t.Context(), b)
		}})
	}
	return ws
}

// runWith is testRun(id) with field set to v.
func runWith(id, field, v string) store.Run {
	r := testRun(id)
	switch field {
	case "id":
		r.ID = id + v
	case "module":
		r.ModuleHash = v
	case "workflow":
		r.Workflow = v
	case "error":
		r.Error = v
	case "parent":
		r.Parent = v
	default:
		panic(fmt.Sprintf("runWith: unknown field %q", field))
	}
	return r
}

// checkNothingStored checks that none of textWrites' writes left a trace.
func checkNothingStored(t *testing.T, s store.Store) {
	t.Helper()
	if os := mustOutcomes(t, s, "tx-run"); len(os) != 1 || os[0].Key != "t1" {
		t.Errorf("outcomes of tx-run after refused writes: %+v; want only the pending call t1", os)
	}
	r := mustRun(t, s, "tx-run")
	if r.Status != store.RunPending || r.Error != "" || r.Cancel != "" || r.LeaseOwner != "" {
		t.Errorf("tx-run after refused writes: %+v; want pending, no error, no cancel, no lease", r)
	}
	if _, err := s.Run(t.Context(), "tx-new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run(tx-new) after refused creates: %v; want ErrNotFound", err)
	}
	if task, err := s.Task(t.Context(), "tx-run", "t1"); err != nil || task.State != store.TaskQueued || task.Attempt != 1 || task.LastError != "" {
		t.Errorf("task t1 after refused writes: %+v, %v; want queued, attempt 1, no error", task, err)
	}
	if ts, err := s.Tasks(t.Context(), "tx-run"); err != nil || len(ts) != 1 {
		t.Errorf("tasks of tx-run after refused writes: %d, %v; want 1", len(ts), err)
	}
	if as, err := s.Attempts(t.Context(), "tx-run"); err != nil || len(as) != 0 {
		t.Errorf("attempts of tx-run after refused writes: %+v, %v; want none", as, err)
	}
	if sc, err := s.Schedules(t.Context()); err != nil || len(sc) != 0 {
		t.Errorf("schedules after refused writes: %+v, %v; want none", sc, err)
	}
	if hs, err := s.Hooks(t.Context()); err != nil || len(hs) != 0 {
		t.Errorf("hooks after refused writes: %+v, %v; want none", hs, err)
	}
	if ms, err := s.Modules(t.Context()); err != nil || len(ms) != 0 {
		t.Errorf("modules after refused writes: %+v, %v; want none", ms, err)
	}
}

// checkBadReads reads with bad ids, keys and names: nothing is found.
func checkBadReads(t *testing.T, s store.Store, bad string) {
	t.Helper()
	notFound := func(what string, err error) {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s with a bad text: %v; want ErrNotFound", what, err)
		}
	}
	_, err := s.Run(t.Context(), bad)
	notFound("Run", err)
	_, err = s.Module(t.Context(), bad)
	notFound("Module", err)
	_, err = s.ModuleInfo(t.Context(), bad)
	notFound("ModuleInfo", err)
	_, err = s.Outcome(t.Context(), "tx-run", bad)
	notFound("Outcome", err)
	_, err = s.Task(t.Context(), bad, "t1")
	notFound("Task", err)
	_, err = s.Schedule(t.Context(), bad)
	notFound("Schedule", err)
	_, err = s.Hook(t.Context(), bad)
	notFound("Hook", err)
	_, err = s.RequestCancel(t.Context(), bad, "stop")
	notFound("RequestCancel", err)
	notFound("DeleteSchedule", s.DeleteSchedule(t.Context(), bad))
	notFound("DeleteHook", s.DeleteHook(t.Context(), bad))
	for what, n := range map[string]func() (int, error){
		"Outcomes":     func() (int, error) { xs, err := s.Outcomes(t.Context(), bad); return len(xs), err },
		"Settlements":  func() (int, error) { xs, err := s.Settlements(t.Context(), bad); return len(xs), err },
		"Attempts":     func() (int, error) { xs, err := s.Attempts(t.Context(), bad); return len(xs), err },
		"Tasks":        func() (int, error) { xs, err := s.Tasks(t.Context(), bad); return len(xs), err },
		"LeaseHistory": func() (int, error) { xs, err := s.LeaseHistory(t.Context(), bad); return len(xs), err },
	} {
		if got, err := n(); err != nil || got != 0 {
			t.Errorf("%s with a bad text: %d, %v; want none, no error", what, got, err)
		}
	}
	l := store.Lease{RunID: "tx-run", Owner: bad, Token: 1}
	if err := s.RenewLease(t.Context(), l, time.Now().Add(time.Minute).UnixNano()); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("RenewLease by a bad owner: %v; want ErrLeaseLost", err)
	}
	if err := s.ReleaseLease(t.Context(), l); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("ReleaseLease by a bad owner: %v; want ErrLeaseLost", err)
	}
}
