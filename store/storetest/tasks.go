package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// The activity task cases of the suite (store.TaskStore): queueing in a
// commit, claims (names, max, visibility, leases, fairness, concurrency),
// listings and counts. Heartbeats, ends and cancellation are in
// tasks_end.go.

// taskNow is the clock of the task cases: later than every task's
// creation (ts(5)), so that a task queued without VisibleAt is claimable.
var taskNow = ts(100).UnixNano()

// taskTTL is the lease the task cases claim with.
const taskTTL = 10 * time.Second

// newTask returns a task of the activity name at (run, key).
func newTask(run, key, name string) store.Task {
	return store.Task{RunID: run, Key: key, Name: name, Input: []byte(`{"key":"` + key + `"}`),
		Options: []byte(`{"retry":{"max":3}}`), CreatedAt: ts(5)}
}

// pendingCall is the pending outcome of the activity call at key.
func pendingCall(run, key, name string) store.RunOutcome {
	return ro(run, store.Outcome{Key: key, Kind: "call", Function: name, Status: store.OutcomePending, UpdatedAt: ts(5)})
}

// queueTask commits the tasks with the pending outcomes of their calls.
func queueTask(t *testing.T, s store.Store, tasks ...store.Task) {
	t.Helper()
	b := store.Batch{Tasks: tasks}
	for _, tk := range tasks {
		b.Outcomes = append(b.Outcomes, pendingCall(tk.RunID, tk.Key, tk.Name))
	}
	mustCommit(t, s, b)
}

func mustClaimTasks(t *testing.T, s store.Store, owner string, now int64, max int, names ...string) []store.Task {
	t.Helper()
	got, err := s.ClaimTasks(t.Context(), store.TaskClaim{Owner: owner, Names: names, Max: max, Now: now, TTL: taskTTL})
	if err != nil {
		t.Fatalf("ClaimTasks(%s, %q, max %d): %v", owner, names, max, err)
	}
	return got
}

func mustTasks(t *testing.T, s store.Store, run string) []store.Task {
	t.Helper()
	got, err := s.Tasks(t.Context(), run)
	if err != nil {
		t.Fatalf("Tasks(%s): %v", run, err)
	}
	return got
}

// mustTask returns task (run, key) as Task returns it, and checks that
// Tasks lists the same.
func mustTask(t *testing.T, s store.Store, run, key string) store.Task {
	t.Helper()
	got, err := s.Task(t.Context(), run, key)
	if err != nil {
		t.Fatalf("Task(%s, %s): %v", run, key, err)
	}
	for _, tk := range mustTasks(t, s, run) {
		if tk.Key == key {
			if !reflect.DeepEqual(tk, got) {
				t.Fatalf("Task(%s, %s) = %+v, but Tasks lists %+v", run, key, got, tk)
			}
			return got
		}
	}
	t.Fatalf("Tasks(%s) has no task %s, but Task returns %+v", run, key, got)
	return store.Task{}
}

// taskIDs names tasks as run.key.
func taskIDs(tasks []store.Task) []string {
	ids := make([]string, len(tasks))
	for i, tk := range tasks {
		ids[i] = tk.IdempotencyKey()
	}
	return ids
}

// taskLine is what the cases compare of a task: everything but Seq,
// CreatedAt and the payloads.
func taskLine(tk store.Task) string {
	return fmt.Sprintf("%s.%s %s attempt %d %s visible %d owner %q claimed %d hb %d expiry %d progress %q err %q",
		tk.RunID, tk.Key, tk.Name, tk.Attempt, tk.State, tk.VisibleAt, tk.Owner, tk.ClaimedAt, tk.Heartbeat, tk.Expiry, tk.Progress, tk.LastError)
}

func checkTask(t *testing.T, what string, got store.Task, want string) {
	t.Helper()
	if line := taskLine(got); line != want {
		t.Errorf("%s:\n got  %s\n want %s", what, line, want)
	}
}

func testTaskQueueInCommit(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("r1"))
	a := newTask("r1", "a", "email")
	a.Timeout = int64(5 * time.Second)
	// Owner and lease fields given to Commit are ignored unless the task
	// is claimed as it is queued (testTaskQueueClaimed).
	a.State, a.Owner, a.ClaimedAt, a.Expiry, a.LastError, a.Progress = store.TaskDone, "w0", 7, 8, "old", []byte(`1`)
	queueTask(t, s, a)
	got := mustTasks(t, s, "r1")
	if len(got) != 1 {
		t.Fatalf("Tasks after queueing = %q, want [r1.a]", taskIDs(got))
	}
	g := got[0]
	checkTask(t, "queued task", g, fmt.Sprintf(`r1.a email attempt 1 queued visible %d owner "" claimed 0 hb 0 expiry 0 progress "" err ""`, ts(5).UnixNano()))
	if !bytes.Equal(g.Input, a.Input) || !bytes.Equal(g.Options, a.Options) || g.Timeout != a.Timeout ||
		!g.CreatedAt.Equal(ts(5)) || g.Seq <= 0 || g.IdempotencyKey() != "r1.a" {
		t.Errorf("queued task = %+v, want the input, options, timeout and creation time given, a positive Seq", g)
	}

	// A replayed commit of the same (run, key) queues nothing new, whatever
	// the task's state: queued, claimed, done, canceled.
	replay := func(state string) {
		t.Helper()
		again := newTask("r1", "a", "other")
		again.Input = []byte(`"replayed"`)
		mustCommit(t, s, store.Batch{Tasks: []store.Task{again, newTask("r1", "c", "email")}})
		got := mustTasks(t, s, "r1")
		if len(got) != 2 || got[0].Key != "a" || got[0].Name != "email" || !bytes.Equal(got[0].Input, a.Input) || got[0].Seq != g.Seq {
			t.Fatalf("Tasks after a replay (task %s) = %+v, want r1.a as first queued and r1.c", state, got)
		}
		if got[0].State != store.TaskState(state) {
			t.Errorf("after a replay, r1.a is %s, want %s", got[0].State, state)
		}
	}
	replay("queued")
	claimed := mustClaimTasks(t, s, "w1", taskNow, 1, "email")
	if !slices.Equal(taskIDs(claimed), []string{"r1.a"}) {
		t.Fatalf("ClaimTasks = %q, want [r1.a]", taskIDs(claimed))
	}
	replay("claimed")
	if err := s.EndTask(t.Context(), store.TaskEnd{RunID: "r1", Key: "a", Attempt: 1, Owner: "w1", Now: taskNow,
		Settle: &store.Settlement{Status: store.OutcomeOK, Value: []byte(`1`), Attempts: 1}}); err != nil {
		t.Fatalf("EndTask: %v", err)
	}
	replay("done")
	if err := s.CancelTasks(t.Context(), "r1", "canceled"); err != nil {
		t.Fatalf("CancelTasks: %v", err)
	}
	replay("done") // a done task stays done; r1.c is canceled now
	if c := mustTask(t, s, "r1", "c"); c.State != store.TaskCanceled {
		t.Errorf("r1.c after CancelTasks and a replay = %s, want canceled", c.State)
	}

	// A task of an unknown run fails the whole batch.
	err := s.Commit(t.Context(), store.Batch{Outcomes: []store.RunOutcome{pendingCall("r1", "x", "email")},
		Tasks: []store.Task{newTask("r1", "x", "email"), newTask("ghost", "x", "email")}})
	if err == nil {
		t.Fatal("Commit queueing a task of an unknown run: no error")
	}
	if got := mustTasks(t, s, "r1"); len(got) != 2 {
		t.Errorf("Tasks after a failed commit = %q, want [r1.a r1.c]", taskIDs(got))
	}
}

func testTaskClaim(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateRun(t, s, testRun("r1"))
	later := newTask("r1", "a3", "email")
	later.VisibleAt = taskNow + int64(time.Second)
	short := newTask("r1", "a4", "email")
	short.Timeout = int64(3 * time.Second)
	queueTask(t, s, newTask("r1", "a1", "email"), newTask("r1", "a2", "sms"), later, short)

	for _, bad := range []store.TaskClaim{
		{Names: []string{"email"}, Max: 1, Now: taskNow, TTL: taskTTL},
		{Owner: "w1", Max: 1, Now: taskNow, TTL: taskTTL},
		{Owner: "w1", Names: []string{"email"}, Now: taskNow, TTL: taskTTL},
		{Owner: "w1", Names: []string{"email"}, Max: 1, Now: taskNow},
	} {
		if got, err := s.ClaimTasks(ctx, bad); err == nil {
			t.Errorf("ClaimTasks(%+v) = %q, want an error", bad, taskIDs(got))
		}
	}
	// Max bounds the claim; the oldest comes first.
	got := mustClaimTasks(t, s, "w1", taskNow, 1, "email")
	if !slices.Equal(taskIDs(got), []string{"r1.a1"}) {
		t.Fatalf("ClaimTasks(max 1) = %q, want [r1.a1]", taskIDs(got))
	}
	want := fmt.Sprintf(`r1.a1 email attempt 1 claimed visible %d owner "w1" claimed %d hb 0 expiry %d progress "" err ""`,
		ts(5).UnixNano(), taskNow, store.LeaseEnd(taskNow, taskTTL, taskNow, 0))
	checkTask(t, "claimed task", got[0], want)
	checkTask(t, "claimed task as stored", mustTask(t, s, "r1", "a1"), want)
	// a3 is not visible yet; a2 is not an email; a4's lease is capped by
	// its timeout.
	got = mustClaimTasks(t, s, "w2", taskNow, 10, "email")
	if !slices.Equal(taskIDs(got), []string{"r1.a4"}) {
		t.Fatalf("ClaimTasks(max 10) = %q, want [r1.a4]", taskIDs(got))
	}
	if e := got[0].Expiry; e != taskNow+short.Timeout || e != store.LeaseEnd(taskNow, taskTTL, taskNow, short.Timeout) {
		t.Errorf("expiry of a task with a 3s timeout claimed for 10s = %d, want %d", e, taskNow+short.Timeout)
	}
	if got := mustClaimTasks(t, s, "w2", later.VisibleAt-1, 10, "email"); len(got) != 0 {
		t.Errorf("ClaimTasks before r1.a3 is visible = %q, want none", taskIDs(got))
	}
	if got := mustClaimTasks(t, s, "w2", later.VisibleAt, 10, "email"); !slices.Equal(taskIDs(got), []string{"r1.a3"}) {
		t.Errorf("ClaimTasks once r1.a3 is visible = %q, want [r1.a3]", taskIDs(got))
	}
	if got := mustClaimTasks(t, s, "w3", taskNow, 10, "fax", "sms"); !slices.Equal(taskIDs(got), []string{"r1.a2"}) {
		t.Errorf("ClaimTasks(fax, sms) = %q, want [r1.a2]", taskIDs(got))
	}
	if got := mustClaimTasks(t, s, "w3", taskNow+int64(time.Hour), 10, "email", "sms"); len(got) != 0 {
		t.Errorf("ClaimTasks with every task claimed = %q, want none (claimed tasks are not claimed again)", taskIDs(got))
	}
}

func testTaskFairness(t *testing.T, s store.Store) {
	for _, id := range []string{"A", "B", "C"} {
		mustCreateRun(t, s, testRun(id))
	}
	var many []store.Task
	for i := range 10 {
		many = append(many, newTask("A", fmt.Sprint(i), "email"))
	}
	queueTask(t, s, many...)
	queueTask(t, s, newTask("B", "0", "email"))
	// B's task, queued after A's ten, is not held back behind them.
	if got := mustClaimTasks(t, s, "w", taskNow, 2, "email"); !slices.Equal(taskIDs(got), []string{"A.0", "B.0"}) {
		t.Fatalf("ClaimTasks(2) = %q, want [A.0 B.0]", taskIDs(got))
	}
	if got := mustClaimTasks(t, s, "w", taskNow, 3, "email"); !slices.Equal(taskIDs(got), []string{"A.1", "A.2", "A.3"}) {
		t.Fatalf("ClaimTasks(3) = %q, want [A.1 A.2 A.3]", taskIDs(got))
	}
	// A run queueing now starts from the claims made, not from zero.
	queueTask(t, s, newTask("C", "0", "email"))
	if got := mustClaimTasks(t, s, "w", taskNow, 2, "email"); !slices.Equal(taskIDs(got), []string{"A.4", "C.0"}) {
		t.Fatalf("ClaimTasks(2) after C queues = %q, want [A.4 C.0]", taskIDs(got))
	}
	// A retry goes behind the run's queued tasks; a task B queues now
	// comes before most of them.
	if err := s.EndTask(t.Context(), store.TaskEnd{RunID: "A", Key: "0", Attempt: 1, Owner: "w", Now: taskNow,
		Retry: &store.TaskRetry{Error: "flaky", VisibleAt: taskNow}}); err != nil {
		t.Fatalf("EndTask(retry): %v", err)
	}
	queueTask(t, s, newTask("B", "1", "email"))
	if got := mustClaimTasks(t, s, "w", taskNow, 3, "email"); !slices.Equal(taskIDs(got), []string{"A.5", "B.1", "A.6"}) {
		t.Fatalf("ClaimTasks(3) after A.0's retry and B's second task = %q, want [A.5 B.1 A.6]", taskIDs(got))
	}
	got := mustClaimTasks(t, s, "w", taskNow, 10, "email")
	if !slices.Equal(taskIDs(got), []string{"A.7", "A.8", "A.9", "A.0"}) || got[3].Attempt != 2 {
		t.Fatalf("ClaimTasks(10) = %q, want [A.7 A.8 A.9 A.0], A.0 at attempt 2", taskIDs(got))
	}
}

func testTaskClaimConcurrent(t *testing.T, s store.Store) {
	const runs, perRun, workers = 3, 20, 6
	for r := range runs {
		id := fmt.Sprintf("r%d", r)
		mustCreateRun(t, s, testRun(id))
		var tasks []store.Task
		for k := range perRun {
			tasks = append(tasks, newTask(id, fmt.Sprint(k), "email"))
		}
		queueTask(t, s, tasks...)
	}
	var mu sync.Mutex
	seen := map[string]string{} // run.key.attempt -> owner
	var errs []error
	var wg sync.WaitGroup
	for w := range workers {
		owner := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for range runs * perRun {
				got, err := s.ClaimTasks(t.Context(), store.TaskClaim{Owner: owner, Names: []string{"email"}, Max: 3, Now: taskNow, TTL: taskTTL})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, tk := range got {
					id := fmt.Sprintf("%s.%d", tk.IdempotencyKey(), tk.Attempt)
					if prev, dup := seen[id]; dup {
						errs = append(errs, fmt.Errorf("%s claimed by %s and %s", id, prev, owner))
					}
					seen[id] = owner
				}
				mu.Unlock()
				if err != nil || len(got) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := mustClaimTasks(t, s, "late", taskNow, 100, "email"); len(seen) != runs*perRun || len(got) != 0 {
		t.Errorf("concurrent claims took %d tasks, then %d were left; want %d, then none", len(seen), len(got), runs*perRun)
	}
	for r := range runs {
		for _, tk := range mustTasks(t, s, fmt.Sprintf("r%d", r)) {
			if id := tk.IdempotencyKey() + ".1"; tk.State != store.TaskClaimed || seen[id] != tk.Owner {
				t.Errorf("%s: state %s, owner %q; want claimed by %q", id, tk.State, tk.Owner, seen[id])
			}
		}
	}
}

func testTasksOrder(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("r1"))
	mustCreateRun(t, s, testRun("r2"))
	queueTask(t, s, newTask("r1", "k3", "email"), newTask("r1", "k1", "sms"))
	queueTask(t, s, newTask("r2", "k0", "email"))
	queueTask(t, s, newTask("r1", "k2", "email"))
	got := mustTasks(t, s, "r1")
	if ids := taskIDs(got); !slices.Equal(ids, []string{"r1.k3", "r1.k1", "r1.k2"}) {
		t.Fatalf("Tasks(r1) = %q, want creation order [r1.k3 r1.k1 r1.k2]", ids)
	}
	if !(got[0].Seq < got[1].Seq && got[1].Seq < got[2].Seq) {
		t.Errorf("Seq of Tasks(r1) = %d, %d, %d; want increasing", got[0].Seq, got[1].Seq, got[2].Seq)
	}
	if got := mustTasks(t, s, "nope"); len(got) != 0 {
		t.Errorf("Tasks(unknown run) = %q, want none", taskIDs(got))
	}
	if got := mustTask(t, s, "r1", "k1"); got.Name != "sms" {
		t.Errorf("Task(r1, k1).Name = %q, want sms", got.Name)
	}
	for _, ref := range [][2]string{{"r1", "k0"}, {"r2", "k1"}, {"nope", "k1"}} {
		if got, err := s.Task(t.Context(), ref[0], ref[1]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Task(%s, %s) = %+v, %v; want ErrNotFound", ref[0], ref[1], got, err)
		}
	}
}

func testTaskQueues(t *testing.T, s store.Store) {
	ctx := t.Context()
	if qs, err := s.TaskQueues(ctx); err != nil || len(qs) != 0 {
		t.Fatalf("TaskQueues of an empty store = %+v, %v; want none", qs, err)
	}
	mustCreateRun(t, s, testRun("r1"))
	queueTask(t, s, newTask("r1", "e1", "b-email"), newTask("r1", "e2", "b-email"), newTask("r1", "e3", "b-email"),
		newTask("r1", "s1", "a-sms"), newTask("r1", "f1", "c-fax"))
	mustClaimTasks(t, s, "w", taskNow, 1, "b-email")
	mustClaimTasks(t, s, "w", taskNow, 1, "a-sms")
	mustClaimTasks(t, s, "w", taskNow, 1, "c-fax")
	if err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "f1", Attempt: 1, Owner: "w", Now: taskNow,
		Settle: &store.Settlement{Status: store.OutcomeOK, Value: []byte(`1`), Attempts: 1}}); err != nil {
		t.Fatalf("EndTask: %v", err)
	}
	qs, err := s.TaskQueues(ctx)
	if err != nil {
		t.Fatalf("TaskQueues: %v", err)
	}
	want := []store.TaskQueue{{Name: "a-sms", Claimed: 1}, {Name: "b-email", Queued: 2, Claimed: 1}}
	if !slices.Equal(qs, want) {
		t.Errorf("TaskQueues = %+v, want %+v (c-fax has only a done task)", qs, want)
	}
}

func testTaskFencedCommit(t *testing.T, s store.Store) {
	createPending(t, s, "r1")
	lease := mustClaimOne(t, s, "w1", 1_000, "r1")
	createPending(t, s, "r2")
	err := s.Commit(t.Context(), store.Batch{Tasks: []store.Task{newTask("r1", "a", "email"), newTask("r2", "a", "email")}, Fence: &lease})
	if err == nil {
		t.Error("fenced Commit queueing a task of another run: no error")
	}
	if got := append(mustTasks(t, s, "r1"), mustTasks(t, s, "r2")...); len(got) != 0 {
		t.Errorf("Tasks after the refused commit = %q, want none", taskIDs(got))
	}
	mustCommit(t, s, store.Batch{Tasks: []store.Task{newTask("r1", "a", "email")}, Fence: &lease})
	if got := mustTasks(t, s, "r1"); !slices.Equal(taskIDs(got), []string{"r1.a"}) {
		t.Errorf("Tasks after a fenced commit = %q, want [r1.a]", taskIDs(got))
	}
}

// testTaskQueueClaimed: a task committed claimed (a claim that took it as
// it was queued) is stored claimed by its owner with the lease given; no
// other claim takes it; its owner heartbeats and ends it; its lease
// expires like any other.
func testTaskQueueClaimed(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("r1"))
	a := newTask("r1", "a", "email")
	a.State, a.Owner, a.ClaimedAt, a.Expiry, a.Heartbeat = store.TaskClaimed, "w1", taskNow, taskNow+int64(taskTTL), 9
	b := newTask("r1", "b", "email")
	queueTask(t, s, a, b)
	checkTask(t, "task claimed as queued", mustTask(t, s, "r1", "a"),
		fmt.Sprintf(`r1.a email attempt 1 claimed visible %d owner "w1" claimed %d hb 0 expiry %d progress "" err ""`,
			ts(5).UnixNano(), taskNow, taskNow+int64(taskTTL)))
	if got := mustClaimTasks(t, s, "w2", taskNow, 5, "email"); !slices.Equal(taskIDs(got), []string{"r1.b"}) {
		t.Errorf("ClaimTasks = %q, want only the task queued unclaimed, [r1.b]", taskIDs(got))
	}
	if _, err := s.HeartbeatTask(t.Context(), "r1", "a", 1, "w2", taskNow, taskTTL, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("heartbeat by another worker: %v, want ErrConflict", err)
	}
	if _, err := s.HeartbeatTask(t.Context(), "r1", "a", 1, "w1", taskNow+1, taskTTL, nil); err != nil {
		t.Errorf("heartbeat by its owner: %v", err)
	}
	if got, err := s.ExpiredTasks(t.Context(), taskNow+1+int64(taskTTL), 10); err != nil || !slices.Contains(taskIDs(got), "r1.a") {
		t.Errorf("ExpiredTasks past the renewed lease = %q, %v; want r1.a among them", taskIDs(got), err)
	}
	if err := s.EndTask(t.Context(), store.TaskEnd{RunID: "r1", Key: "a", Attempt: 1, Owner: "w1", Now: taskNow + 2,
		Settle: &store.Settlement{Status: store.OutcomeOK, Value: []byte(`1`), Attempts: 1}}); err != nil {
		t.Errorf("EndTask by its owner: %v", err)
	}
	if st := mustTask(t, s, "r1", "a").State; st != store.TaskDone {
		t.Errorf("after its end the task is %s, want done", st)
	}
}
