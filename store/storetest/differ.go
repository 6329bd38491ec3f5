package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// Differential applies the same random operations to a store and to a
// reference store (usually SQLite), for each of seeds seeds, and compares
// every answer, then the final state. open and ref make a fresh, empty
// store for each seed; name and refName word the failures. It finds what
// the shared suite does not ask about (orders, ties, rarely combined
// fields).
func Differential(t *testing.T, name string, open func(t *testing.T) store.Store, refName string, ref func(t *testing.T) store.Store) {
	seeds, ops := 8, 300
	if testing.Short() {
		seeds, ops = 3, 200
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			got, want := open(t), ref(t)
			defer closeStore(t, got)
			defer closeStore(t, want)
			d := &differ{t: t, rng: rand.New(rand.NewPCG(seed, 1)), got: got, ref: want, name: name, refName: refName, start: time.Now()}
			d.declareAttrs() // differ_attrs.go
			for i := range ops {
				d.step(i)
				if t.Failed() {
					return
				}
			}
			d.compareAll("final state")
		})
	}
}

type differ struct {
	t             *testing.T
	rng           *rand.Rand
	got, ref      store.Store
	name, refName string
	start         time.Time // times at or after start were set by a store to now
}

var (
	diffRuns      = []string{"a", "b", "c", "d", "a~2"} // a~2 continues a (store.ChainRoot)
	diffKeys      = []string{"1", "2", "3", store.CancelKey}
	diffHashes    = []string{"h1", "h2", "h3"}
	diffWorkflows = []string{"w", "w", "v"}
	diffNames     = []string{"", "x", "y"}
	diffStatuses  = []store.RunStatus{"", store.RunPending, store.RunRunning, store.RunSuspended, store.RunSuspended,
		store.RunCompleted, store.RunFailed, store.RunDiverged, store.RunCanceled}
	diffOutcomeStatuses = []store.OutcomeStatus{store.OutcomePending, store.OutcomeOK, store.OutcomeError}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// ts is a fixed time; small n give ties on purpose.
func diffTS(n int) time.Time { return time.Unix(1_700_000_000+int64(n), 123_456_000) }

// maybeTS is a fixed time or, one time in four, zero (the store sets now).
func (d *differ) maybeTS() time.Time {
	if d.rng.IntN(4) == 0 {
		return time.Time{}
	}
	return diffTS(d.rng.IntN(3))
}

func (d *differ) value() []byte {
	if d.rng.IntN(3) == 0 {
		return nil
	}
	return fmt.Appendf(nil, "%d", d.rng.IntN(100))
}

func (d *differ) runID() string {
	if d.rng.IntN(20) == 0 {
		return "ghost"
	}
	return pick(d.rng, diffRuns)
}

func (d *differ) step(i int) {
	ctx, rng := d.t.Context(), d.rng
	what := func(op string, args ...any) string { return fmt.Sprintf("op %d: %s%v", i, op, args) }
	switch rng.IntN(18) {
	case 0:
		m := store.Module{Hash: pick(rng, diffHashes), Name: pick(rng, diffNames), Bytes: d.value(),
			ABIVersion: rng.IntN(3), CreatedAt: diffTS(rng.IntN(3))}
		if rng.IntN(2) == 0 {
			m.Workflows = []string{"w1", "w2"}[:rng.IntN(3)]
		}
		d.compareErr(what("PutModule", m.Hash, m.Name), d.got.PutModule(ctx, m), d.ref.PutModule(ctx, m))
	case 1:
		key := pick(rng, append(append([]string{""}, diffHashes...), diffNames...))
		m1, err1 := d.got.Module(ctx, key)
		m2, err2 := d.ref.Module(ctx, key)
		d.compare(what("Module", key), m1, err1, m2, err2)
	case 2:
		m1, err1 := d.got.Modules(ctx)
		m2, err2 := d.ref.Modules(ctx)
		d.compare(what("Modules"), m1, err1, m2, err2)
	case 3:
		r := store.Run{ID: pick(rng, diffRuns), ModuleHash: pick(rng, diffHashes), Workflow: pick(rng, diffWorkflows), Input: d.value(),
			Status: pick(rng, diffStatuses), Seed: rng.Uint64(), StartTime: int64(rng.IntN(5)),
			WakeAt: int64(rng.IntN(6)), Deadline: int64(rng.IntN(6)), CreatedAt: d.maybeTS(), UpdatedAt: d.maybeTS()}
		if rng.IntN(4) == 0 {
			r.Cancel = "early"
		}
		if rng.IntN(3) == 0 {
			r.Parent = pick(rng, diffRuns)
		}
		r.Attrs = d.attrValues()
		r1, c1, err1 := d.got.CreateRun(ctx, r)
		r2, c2, err2 := d.ref.CreateRun(ctx, r)
		d.compare(what("CreateRun", r.ID), []any{r1, c1}, err1, []any{r2, c2}, err2)
	case 4:
		f := store.RunFilter{Limit: rng.IntN(4) - 1, After: pick(rng, []string{"", "a", "b", "bb", "d"})}
		if rng.IntN(2) == 0 {
			f.Status = pick(rng, diffStatuses)
		}
		d.runsFilter(&f)
		r1, err1 := d.got.Runs(ctx, f)
		r2, err2 := d.ref.Runs(ctx, f)
		d.compare(what("Runs", f), r1, err1, r2, err2)
	case 5:
		now, limit := int64(rng.IntN(7)), rng.IntN(4)-1
		r1, err1 := d.got.DueRuns(ctx, now, limit)
		r2, err2 := d.ref.DueRuns(ctx, now, limit)
		d.compare(what("DueRuns", now, limit), r1, err1, r2, err2)
	case 6, 7:
		d.commitStep(what)
	case 8:
		st := store.Settlement{RunID: d.runID(), Key: pick(rng, diffKeys), Status: pick(rng, diffOutcomeStatuses[1:]),
			Value: d.value(), Error: pick(rng, []string{"", "no"}), CreatedAt: diffTS(rng.IntN(3))}
		if rng.IntN(10) == 0 {
			st.Status = "maybe"
		}
		d.compareErr(what("Settle", st), d.got.Settle(ctx, st), d.ref.Settle(ctx, st))
	case 9:
		id := d.runID()
		s1, err1 := d.got.Settlements(ctx, id)
		s2, err2 := d.ref.Settlements(ctx, id)
		d.compare(what("Settlements", id), s1, err1, s2, err2)
	case 10:
		id, reason := d.runID(), pick(rng, []string{"", "stop", "halt"})
		switch rng.IntN(3) {
		case 0:
			r1, err1 := d.got.RequestCancel(ctx, id, reason)
			r2, err2 := d.ref.RequestCancel(ctx, id, reason)
			d.compare(what("RequestCancel", id, reason), r1, err1, r2, err2)
		case 1:
			by, at := pick(rng, []string{"", "ops", "api"}), int64(rng.IntN(3))
			r1, err1 := d.got.PauseRun(ctx, id, by, reason, at)
			r2, err2 := d.ref.PauseRun(ctx, id, by, reason, at)
			d.compare(what("PauseRun", id, by, reason, at), r1, err1, r2, err2)
		default:
			r1, err1 := d.got.UnpauseRun(ctx, id)
			r2, err2 := d.ref.UnpauseRun(ctx, id)
			d.compare(what("UnpauseRun", id), r1, err1, r2, err2)
		}
	case 11:
		id := d.runID()
		o1, err1 := d.got.Outcomes(ctx, id)
		o2, err2 := d.ref.Outcomes(ctx, id)
		d.compare(what("Outcomes", id), o1, err1, o2, err2)
	case 15, 16:
		d.pruneStep(what)
	case 17:
		d.resetStep(what)
	default:
		d.taskStep(what)
	}
}

// compareAll compares everything both stores hold.
func (d *differ) compareAll(what string) {
	ctx := d.t.Context()
	for _, id := range append(diffRuns, "ghost") {
		r1, err1 := d.got.Run(ctx, id)
		r2, err2 := d.ref.Run(ctx, id)
		d.compare(what+": Run "+id, r1, err1, r2, err2)
		o1, err1 := d.got.Outcomes(ctx, id)
		o2, err2 := d.ref.Outcomes(ctx, id)
		d.compare(what+": Outcomes "+id, o1, err1, o2, err2)
		s1, err1 := d.got.Settlements(ctx, id)
		s2, err2 := d.ref.Settlements(ctx, id)
		d.compare(what+": Settlements "+id, s1, err1, s2, err2)
	}
	d.compareTasks(what)
	d.compareAttrs(what)
	m1, err1 := d.got.Modules(ctx)
	m2, err2 := d.ref.Modules(ctx)
	d.compare(what+": Modules", m1, err1, m2, err2)
	for now := range int64(7) {
		r1, err1 := d.got.DueRuns(ctx, now, 0)
		r2, err2 := d.ref.DueRuns(ctx, now, 0)
		d.compare(fmt.Sprintf("%s: DueRuns(%d)", what, now), r1, err1, r2, err2)
	}
}

func (d *differ) compareErr(what string, err1, err2 error) {
	d.t.Helper()
	if errClass(err1) != errClass(err2) {
		d.t.Errorf("%s: %s error %v, %s error %v", what, d.name, err1, d.refName, err2)
	}
}

func (d *differ) compare(what string, got any, err1 error, want any, err2 error) {
	d.t.Helper()
	d.compareErr(what, err1, err2)
	if g, w := d.norm(reflect.ValueOf(got)), d.norm(reflect.ValueOf(want)); !reflect.DeepEqual(g, w) {
		d.t.Errorf("%s:\n %s %+v\n %s %+v", what, d.name, g, d.refName, w)
	}
}

func errClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, store.ErrNotFound):
		return "not found"
	case errors.Is(err, store.ErrConflict):
		return "conflict"
	case errors.Is(err, store.ErrImmutable):
		return "immutable"
	}
	return "error"
}

// norm returns v as plain values comparable with reflect.DeepEqual: empty
// slices become nil, times set to now become "now", other times their unix
// nanoseconds.
func (d *differ) norm(v reflect.Value) any {
	switch {
	case !v.IsValid():
		return nil
	case v.Type() == reflect.TypeFor[time.Time]():
		t := v.Interface().(time.Time)
		if !t.Before(d.start) {
			return "now"
		}
		return t.UnixNano()
	case v.Kind() == reflect.Interface:
		return d.norm(v.Elem())
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		if v.Len() == 0 {
			return nil
		}
		return string(v.Bytes())
	case v.Kind() == reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = d.norm(v.Index(i))
		}
		return out
	case v.Kind() == reflect.Struct:
		out := map[string]any{}
		for i := range v.NumField() {
			out[v.Type().Field(i).Name] = d.norm(v.Field(i))
		}
		return out
	}
	return v.Interface()
}

// closeStore closes a store the differential test opened, failing the
// test if it cannot.
func closeStore(t *testing.T, st store.Store) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Errorf("close the store: %v", err)
	}
}

// runsFilter sets f's other filters and its order at random. The orders
// by time are left out: runs whose times the stores set to now would
// sort by each store's clock (testRunsOrder covers them).
func (d *differ) runsFilter(f *store.RunFilter) {
	rng := d.rng
	if rng.IntN(3) == 0 {
		f.Workflow = pick(rng, diffWorkflows)
	}
	if rng.IntN(3) == 0 {
		f.Module = pick(rng, diffHashes)
	}
	if rng.IntN(3) == 0 {
		f.CreatedFrom = diffTS(rng.IntN(3)).UnixNano()
	}
	if rng.IntN(3) == 0 {
		f.CreatedTo = diffTS(rng.IntN(3)).UnixNano()
	}
	f.Attrs = d.attrConds()
	f.Order = pick(rng, []store.RunOrder{store.OrderID, store.OrderID, store.OrderStatus})
	f.Desc = rng.IntN(3) == 0
	if f.Order == store.OrderStatus {
		f.AfterKey = int64(rng.IntN(len(store.RunStatuses)))
	}
}

// commitStep commits a random batch to both stores; they must agree on
// whether it fails.
func (d *differ) commitStep(what func(op string, args ...any) string) {
	ctx, rng := d.t.Context(), d.rng
	var b store.Batch
	for range rng.IntN(4) {
		b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: d.runID(), Outcome: store.Outcome{
			Key: pick(rng, diffKeys), Kind: pick(rng, []string{"promise", "promise", "step", "child"}), Function: "f",
			Status: pick(rng, diffOutcomeStatuses), Value: d.value(), Error: pick(rng, []string{"", "boom"}),
			Attempts: rng.IntN(4), Seq: int64(rng.IntN(4)), Waited: rng.IntN(2) == 0, Idle: int64(rng.IntN(3)),
			WakeOrder: rng.IntN(3), VTime: int64(rng.IntN(9)), Deadline: int64(rng.IntN(9)),
			Orphaned: rng.IntN(5) == 0, UpdatedAt: d.maybeTS(),
		}})
	}
	for range rng.IntN(3) {
		b.Runs = append(b.Runs, store.Run{ID: d.runID(), ModuleHash: pick(rng, diffHashes), Status: pick(rng, diffStatuses),
			Result: d.value(), Error: pick(rng, []string{"", "bad"}), WakeAt: int64(rng.IntN(6)),
			Deadline: 99, Cancel: "ignored", Input: []byte("ignored"), UpdatedAt: d.maybeTS()})
	}
	for range rng.IntN(2) {
		b.Settlements = append(b.Settlements, store.Settlement{RunID: d.runID(), Key: pick(rng, diffKeys),
			Status: pick(rng, diffOutcomeStatuses[1:]), Value: d.value(), CreatedAt: diffTS(rng.IntN(3))})
	}
	b.Tasks = d.batchTasks()
	if vs := d.attrValues(); vs != nil {
		b.Attrs = []store.RunAttrs{{RunID: d.runID(), Values: vs}}
	}
	err1, err2 := d.got.Commit(ctx, b), d.ref.Commit(ctx, b)
	// The backends may word (and wrap) a failure differently: SQLite
	// and Postgres report an outcome or settlement of an unknown run as
	// a foreign key violation, the memory store as store.ErrNotFound.
	// A batch with several faults may fail for a different one in
	// each (an unknown run, or a write-once violation).
	if (err1 == nil) != (err2 == nil) {
		d.t.Errorf("%s: %s error %v, %s error %v", what("Commit", b), d.name, err1, d.refName, err2)
	}
}

// pruneStep prunes, or deletes one run, in both stores.
func (d *differ) pruneStep(what func(op string, args ...any) string) {
	ctx, rng := d.t.Context(), d.rng
	if rng.IntN(2) == 0 {
		before, limit, dry := diffTS(rng.IntN(4)).UnixNano(), rng.IntN(4)-1, rng.IntN(3) == 0
		ns := []string{"", store.DefaultNamespace}[rng.IntN(2)]
		r1, err1 := d.got.PruneRuns(ctx, ns, before, limit, dry)
		r2, err2 := d.ref.PruneRuns(ctx, ns, before, limit, dry)
		d.compare(what("PruneRuns", ns, before, limit, dry), r1, err1, r2, err2)
		return
	}
	id := d.runID()
	d.compareErr(what("DeleteRun", id), d.got.DeleteRun(ctx, id), d.ref.DeleteRun(ctx, id))
}
