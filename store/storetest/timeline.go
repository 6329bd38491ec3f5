package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/skeinrun/skein/store"
)

// testTimeline: an outcome's StartedAt and SettledAt and a run's attempts
// round-trip; a later write keeps the non-zero times stored (a replay
// never moves them), and an attempt keeps its known start, end and error.
func testTimeline(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("run-1"))
	ctx := t.Context()
	pending := store.Outcome{Key: "t2.1", Kind: "step", Function: "charge", Status: store.OutcomePending, Attempts: 1, StartedAt: 1_000}
	attempt := func(key string, n int, start, end int64, err string) store.RunAttempt {
		return store.RunAttempt{RunID: "run-1", Attempt: store.Attempt{Key: key, N: n, Start: start, End: end, Error: err}}
	}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", pending)},
		Attempts: []store.RunAttempt{attempt("t2.1", 1, 1_000, 0, "")}})
	if got := mustOutcomes(t, s, "run-1"); len(got) != 1 || got[0].StartedAt != 1_000 || got[0].SettledAt != 0 {
		t.Fatalf("pending outcome: %+v, want StartedAt 1000, SettledAt 0", got)
	}

	// The first attempt fails, the second starts, then settles the op.
	settled := pending
	settled.Status, settled.Value, settled.Seq, settled.Attempts = store.OutcomeOK, []byte(`"ok"`), 1, 2
	settled.StartedAt, settled.SettledAt = 0, 5_000 // the settling execution did not issue the op
	mustCommit(t, s, store.Batch{Attempts: []store.RunAttempt{attempt("t2.1", 1, 0, 2_000, "boom"), attempt("t2.1", 2, 3_000, 0, "")}})
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", settled)},
		Attempts: []store.RunAttempt{attempt("t2.1", 2, 0, 5_000, ""), attempt(store.IdleKey, 1, 2_500, 2_900, "")}})
	// A replay writes the record and the attempts again, with its own clock.
	replay := settled
	replay.StartedAt, replay.SettledAt, replay.Orphaned = 9_000, 9_500, true
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", replay)},
		Attempts: []store.RunAttempt{attempt("t2.1", 1, 9_000, 9_100, "other"), attempt(store.IdleKey, 1, 0, 9_900, "")}})

	got := mustOutcomes(t, s, "run-1")
	if len(got) != 1 || got[0].StartedAt != 1_000 || got[0].SettledAt != 5_000 || !got[0].Orphaned || got[0].Status != store.OutcomeOK {
		t.Fatalf("after settle and replay: %+v, want StartedAt 1000, SettledAt 5000, orphaned, ok", got)
	}
	atts, err := s.Attempts(ctx, "run-1")
	if err != nil {
		t.Fatalf("Attempts: %v", err)
	}
	want := []store.Attempt{
		{Key: store.IdleKey, N: 1, Start: 2_500, End: 2_900},
		{Key: "t2.1", N: 1, Start: 1_000, End: 2_000, Error: "boom"},
		{Key: "t2.1", N: 2, Start: 3_000, End: 5_000},
	}
	if !slices.Equal(atts, want) {
		t.Fatalf("Attempts:\n got %+v\nwant %+v", atts, want)
	}
	if atts, err := s.Attempts(ctx, "no-such-run"); err != nil || len(atts) != 0 {
		t.Errorf("Attempts of an unknown run = %+v, %v; want none, no error", atts, err)
	}
	// An attempt of an unknown run fails its batch, which leaves no trace.
	bad := store.Batch{Outcomes: []store.RunOutcome{ro("run-1", store.Outcome{Key: "x", Kind: "sleep", Function: "sleep", Status: store.OutcomePending})},
		Attempts: []store.RunAttempt{{RunID: "no-such-run", Attempt: store.Attempt{Key: "1", N: 1, Start: 1}}}}
	if err := s.Commit(ctx, bad); err == nil {
		t.Errorf("Commit of an attempt of an unknown run succeeded")
	}
	if got := mustOutcomes(t, s, "run-1"); len(got) != 1 {
		t.Errorf("the failed batch left outcomes: %+v", got)
	}
	// A fenced batch writes attempts of its own run only.
	fenced := store.Batch{Attempts: []store.RunAttempt{attempt("1", 1, 1, 2, "")}, Fence: &store.Lease{RunID: "other", Owner: "w", Token: 1}}
	if err := fenced.CheckFenceWrites(); err == nil || errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("CheckFenceWrites of an attempt of another run = %v, want an error naming it", err)
	}
}
