package storetest

import "github.com/skeinrun/skein/store"

// resetStep resets a random run (ResetRun) onto another random id, with a
// settled record and its attempt, and compares the answers: the new run,
// or the class of the error (an unknown run, a run reset already, a new
// id taken).
func (d *differ) resetStep(what func(string, ...any) string) {
	ctx, rng := d.t.Context(), d.rng
	from, id := d.runID(), pick(d.rng, diffRuns)+"~r"
	if rng.IntN(3) == 0 {
		id = d.runID()
	}
	next := store.Run{ID: id, ModuleHash: pick(rng, diffHashes), Workflow: pick(rng, diffWorkflows), Input: d.value(),
		Seed: rng.Uint64(), StartTime: int64(rng.IntN(5)), ResetFrom: from, ResetKey: pick(rng, diffKeys),
		CreatedAt: diffTS(rng.IntN(3)), UpdatedAt: diffTS(3)}
	o := store.Outcome{Key: pick(rng, diffKeys), Kind: "step", Function: "f", Status: store.OutcomeOK, Value: d.value(),
		Attempts: 1, Seq: 1, VTime: int64(rng.IntN(9)), UpdatedAt: diffTS(4)}
	r := store.Reset{From: from, Batch: store.Batch{Creates: []store.Run{next},
		Outcomes: []store.RunOutcome{{RunID: id, Outcome: o}},
		Attempts: []store.RunAttempt{{RunID: id, Attempt: store.Attempt{Key: o.Key, N: 1, Start: 5, End: 6}}}}}
	r1, err1 := d.got.ResetRun(ctx, r)
	r2, err2 := d.ref.ResetRun(ctx, r)
	d.compare(what("ResetRun", from, id), r1, err1, r2, err2)
}
