package check

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/store"
)

// Report is what Module found.
type Report struct {
	Workflow  string
	Seed      uint64
	Schedules int
	// Replays counts the crash points checked. CrashPoints counts every
	// crash point of every run of every schedule (a journal of n
	// settlements has n+1: before each settlement, and after the last):
	// Replays is less when the Budget did not allow them all, and the
	// summary says so.
	Replays     int
	CrashPoints int
	// Budget is Options.Budget.
	Budget time.Duration
	// Shared counts the crash points of Replays that were not replayed
	// again because an earlier schedule recorded the same log and ended
	// the same way: its replays start from the same records, and their
	// findings are reported once, under that schedule.
	Shared int
	// Divergences lists every replay that did not go on exactly as its
	// schedule did.
	Divergences []Divergence
	// IDConflicts lists every key that names different ops in different
	// schedules without a recorded choice that differs between them before
	// the op: ids that depend on timing.
	IDConflicts []IDConflict
	// ChoiceDependent lists every key that names different ops in two
	// schedules after a recorded choice (a Select) that differs between
	// them: legitimate, since the journal records the choice.
	ChoiceDependent []ChoiceDependence
	// Ends groups the schedules by how the run ended; more than one group
	// means the result depends on the schedule (legitimate with Select).
	Ends []EndGroup
	// Promises groups the schedules by how the check settled each
	// external promise (host/internal/exec/checkpromise.go); a
	// successor's promises are keyed "~N:KEY", a child run's
	// "CHILD-KEY/KEY".
	Promises []PromiseUse
	// Chain is the runs the first schedule ran: the run, then each
	// successor it continued as (one entry for a run that does not
	// continue). LongestJournal is the most settled outcomes of any run
	// of any schedule.
	Chain          []ChainRun
	LongestJournal int
	Elapsed        time.Duration
}

// Divergence is a replay that departed from its schedule's journal.
type Divergence struct {
	Schedule int
	// CrashAt is the crash point: the replay started from a store holding
	// the records made before the CrashAt-th settlement of the journal.
	// The point after the last settlement is the verifying replay of the
	// whole journal, which runs nothing.
	CrashAt int
	// Key is the first key that differs ("" when the difference is the
	// run's end); Expected and Got describe it.
	Key, Expected, Got string
	// Run is the successor the replay was of, in a schedule whose run
	// continued as new ("" for the schedule's first run), and ChainRun
	// its position in the chain (N for {run}~N; 0 for the first run):
	// what Options.ChainRun takes to reproduce it.
	Run      string
	ChainRun int
}

// IDConflict is a key issued as different ops by two schedules.
type IDConflict struct {
	Key                  string
	ScheduleA, ScheduleB int
	A, B                 KeyOp
}

// ChoiceDependence is a key issued as different ops by two schedules
// after a recorded choice that differs between them.
type ChoiceDependence struct {
	Key                  string
	ScheduleA, ScheduleB int
	A, B                 KeyOp
	// Choice is the first recorded choice before the op that differs.
	Choice Choice
}

// Choice is a Select whose outcome differs between two schedules: the
// Select-th Select of the task with lineage path Task ("" is the root),
// and the key of the future it chose in schedule A and in B (a task's
// future is its scope key, e.g. "t2").
// With Promise set, it is instead an external promise of the task that
// the check settled itself, differently in A and B
// (host/internal/exec/checkpromise.go).
type Choice struct {
	Task    string
	Select  int
	Promise string
	A, B    string
}

func (c Choice) String() string {
	task := c.Task
	if task == "" {
		task = "root"
	}
	if c.Promise != "" {
		return fmt.Sprintf("the check's settlement of promise %s, awaited by task %s,", c.Promise, task)
	}
	return fmt.Sprintf("select %d of task %s", c.Select, task)
}

// KeyOp is what a key was issued as: the op's kind and function, and the
// lineage path of the task that issued it ("" is the root task).
type KeyOp struct{ Kind, Function, Task string }

// EndGroup is one way the run ended, and the schedules that ended so.
type EndGroup struct {
	Status    store.RunStatus
	Result    string // JSON
	Error     string
	Schedules []int
}

// Sampled reports whether the budget left crash points unreplayed.
func (r *Report) Sampled() bool { return r.Budget > 0 && r.Replays < r.CrashPoints }

// OK reports whether nothing diverged and ids do not depend on the
// schedule.
func (r *Report) OK() bool { return len(r.Divergences) == 0 && len(r.IDConflicts) == 0 }

// Summary is the one-line result, e.g. "race: 200 schedules, 1400
// replays, 0 divergences, ids schedule-independent, result
// schedule-independent".
func (r *Report) Summary() string {
	ids := "ids schedule-independent"
	if n := len(r.ChoiceDependent); n > 0 {
		ids = fmt.Sprintf("ids schedule-independent up to recorded choices (%d keys follow a Select)", n)
	}
	if n := len(r.IDConflicts); n > 0 {
		ids = fmt.Sprintf("ids DEPEND ON THE SCHEDULE (%d keys)", n)
	}
	res := "result schedule-independent"
	if len(r.Ends) > 1 {
		res = fmt.Sprintf("result depends on the schedule (%d different ends)", len(r.Ends))
	}
	shared := ""
	if r.Shared > 0 {
		shared = fmt.Sprintf(" (%d shared by schedules that recorded the same journal)", r.Shared)
	}
	if r.Sampled() {
		shared += fmt.Sprintf(" of %d crash points (%.1f%%: sampled to fit the budget of %s; a budget of 0 replays every one)",
			r.CrashPoints, 100*float64(r.Replays)/float64(max(r.CrashPoints, 1)), r.Budget)
	}
	chain := ""
	if n := len(r.Chain); n > 1 {
		chain = fmt.Sprintf(", a chain of %d runs continued as new (longest journal %d)", n, r.LongestJournal)
	}
	return fmt.Sprintf("%s: %d schedules, %d replays%s, %d divergences, %s, %s%s",
		r.Workflow, r.Schedules, r.Replays, shared, len(r.Divergences), ids, res, chain)
}

// Details writes every failure with what reproduces it (the flags of
// `skein check`), and the ends of a schedule-dependent result.
func (r *Report) Details(w io.Writer) {
	for _, d := range r.Divergences {
		fmt.Fprintf(w, "divergence: schedule %d, crash at %d", d.Schedule, d.CrashAt)
		if d.Run != "" {
			fmt.Fprintf(w, ", run %s", d.Run)
		}
		if d.Key != "" {
			fmt.Fprintf(w, ", key %q", d.Key)
		}
		chain := ""
		if d.ChainRun > 1 {
			chain = fmt.Sprintf(" --chain-run %d", d.ChainRun)
		}
		fmt.Fprintf(w, "\n  expected: %s\n  got:      %s\n  reproduce: --seed %d --schedule %d%s --crash-at %d\n",
			d.Expected, d.Got, r.Seed, d.Schedule, chain, d.CrashAt)
	}
	for _, c := range r.IDConflicts {
		fmt.Fprintf(w, "id depends on the schedule: key %q is %s in schedule %d but %s in schedule %d\n  reproduce: --seed %d --schedule %d\n",
			c.Key, c.A, c.ScheduleA, c.B, c.ScheduleB, r.Seed, c.ScheduleB)
	}
	for _, c := range r.ChoiceDependent {
		fmt.Fprintf(w, "id follows a recorded choice: key %q is %s in schedule %d but %s in schedule %d, after %s chose %q in schedule %d and %q in schedule %d\n",
			c.Key, c.A, c.ScheduleA, c.B, c.ScheduleB, c.Choice, c.Choice.A, c.ScheduleA, c.Choice.B, c.ScheduleB)
	}
	for _, p := range r.Promises {
		eg := ""
		if p.Example != "" {
			eg = ", e.g. " + p.Example
		}
		fmt.Fprintf(w, "promise %s: %s in %d schedules (first: %d%s)\n", p.Key, p.How, len(p.Schedules), p.Schedules[0], eg)
	}
	if len(r.Ends) > 1 {
		for _, e := range r.Ends {
			fmt.Fprintf(w, "end: %s %s in %d schedules (first: %d)\n", e.Status, endText(e.Result, e.Error), len(e.Schedules), e.Schedules[0])
		}
	}
}

func (k KeyOp) String() string {
	task := k.Task
	if task == "" {
		task = "root"
	}
	return fmt.Sprintf("%s %q of task %s", k.Kind, k.Function, task)
}

func endText(result, err string) string {
	if err != "" {
		return fmt.Sprintf("error %q", err)
	}
	return result
}

// checkEpoch is the virtual time every checked run starts at, so that
// schedules are comparable (2026-01-01T00:00:00Z).
const checkEpoch = 1767225600 * int64(time.Second)

// reportFolder folds the results of the schedules into the report in the
// order of the schedules, as they come (a result that comes before its
// turn waits for it): their replays and divergences, the keys issued as
// different ops in two schedules, the schedules grouped by how the run
// ended and how each promise was settled. Of each key it keeps only the
// first schedule's op, so its memory follows the keys, not the schedules.
type reportFolder struct {
	mu         sync.Mutex
	r          *Report
	progress   func(done, total int)
	total      int
	next       int                    // the index of the next result to fold
	waiting    map[int]scheduleResult // results that came before their turn
	seen       map[string]seenOp      // per key: the first schedule that issued it
	conflicted map[string]bool
	followed   map[string]bool
	err        error
}

// seenOp is what a key was issued as in the first schedule that issued it.
type seenOp struct {
	k       int
	op      exec.SimOp
	choices []exec.SelectChoice
}

func newReportFolder(o Options, ks []int) *reportFolder {
	return &reportFolder{r: &Report{Workflow: o.Workflow, Seed: o.Seed, Schedules: len(ks), Budget: o.Budget},
		progress: o.Progress, total: len(ks), waiting: map[int]scheduleResult{}, seen: map[string]seenOp{},
		conflicted: map[string]bool{}, followed: map[string]bool{}}
}

// add takes the result of the i-th schedule and folds every result whose
// turn has come.
func (f *reportFolder) add(i int, res scheduleResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waiting[i] = res
	for {
		res, ok := f.waiting[f.next]
		if !ok {
			return
		}
		delete(f.waiting, f.next)
		f.next++
		f.fold(res)
		if f.progress != nil {
			f.progress(f.next, f.total)
		}
	}
}

// fold adds one schedule's result to the report.
func (f *reportFolder) fold(res scheduleResult) {
	r := f.r
	if res.err != nil {
		if f.err == nil {
			f.err = fmt.Errorf("check: schedule %d: %w", res.k, res.err)
		}
		return
	}
	r.Replays += res.replays
	r.Shared += res.shared
	r.CrashPoints += res.crashPoints
	if r.Chain == nil {
		r.Chain = res.chain
	}
	for _, c := range res.chain {
		r.LongestJournal = max(r.LongestJournal, c.Journal)
	}
	r.Divergences = append(r.Divergences, res.divergences...)
	for _, key := range slices.Sorted(maps.Keys(res.ops)) {
		first, ok := f.seen[key]
		if !ok {
			f.seen[key] = seenOp{k: res.k, op: res.ops[key], choices: res.choices[key]}
			continue
		}
		a, b := first.op, res.ops[key]
		if a == b || f.conflicted[key] {
			continue
		}
		if c, ok := firstDifferentChoice(first.choices, res.choices[key]); ok {
			if !f.followed[key] {
				f.followed[key] = true
				r.ChoiceDependent = append(r.ChoiceDependent, ChoiceDependence{Key: key, ScheduleA: first.k, ScheduleB: res.k,
					A: KeyOp(a), B: KeyOp(b), Choice: c})
			}
			continue
		}
		f.conflicted[key] = true
		r.IDConflicts = append(r.IDConflicts, IDConflict{Key: key, ScheduleA: first.k, ScheduleB: res.k, A: KeyOp(a), B: KeyOp(b)})
	}
	r.addEnd(res.k, res.end)
	r.addPromises(res.k, res.promised)
}

// report returns the report once every result is folded.
func (f *reportFolder) report() (*Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return f.r, nil
}

// addEnd counts schedule k in the group of its end.
func (r *Report) addEnd(k int, e EndGroup) {
	for g := range r.Ends {
		if r.Ends[g].Status == e.Status && r.Ends[g].Result == e.Result && r.Ends[g].Error == e.Error {
			r.Ends[g].Schedules = append(r.Ends[g].Schedules, k)
			return
		}
	}
	r.Ends = append(r.Ends, EndGroup{Status: e.Status, Result: e.Result, Error: e.Error, Schedules: []int{k}})
}

// PromiseUse is one way a promise was settled in a check, and the
// schedules that settled it so.
type PromiseUse struct {
	Key string // the promise's key in its run ("approve"); a child's is "{child key}/{key}"
	// How is "a value generated from its schema" (Example is the first
	// schedule's), "error", "left pending", or the outcome given for the
	// key (`value {"approved":true} (given)`).
	How       string
	Example   string `json:",omitempty"`
	Schedules []int
}

// addPromises counts schedule k's promises in the report's groups.
func (r *Report) addPromises(k int, promised map[string]string) {
	for _, key := range slices.Sorted(maps.Keys(promised)) {
		how, example := promised[key], ""
		if v, ok := strings.CutPrefix(how, exec.PromiseGenerated); ok {
			how, example = strings.TrimSuffix(exec.PromiseGenerated, ": "), v
		}
		found := false
		for i := range r.Promises {
			if p := &r.Promises[i]; p.Key == key && p.How == how {
				p.Schedules = append(p.Schedules, k)
				found = true
				break
			}
		}
		if !found {
			r.Promises = append(r.Promises, PromiseUse{Key: key, How: how, Example: example, Schedules: []int{k}})
		}
	}
}
