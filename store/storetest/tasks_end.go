package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// The activity task cases of heartbeats, ends (settle, retry, expired
// leases), expired leases and cancellation.

const sec = int64(time.Second)

// suspendedWithTasks creates run id suspended on the pending calls of the
// tasks it queues, one per key, of activity "email".
func suspendedWithTasks(t *testing.T, s store.Store, id string, keys ...string) {
	t.Helper()
	r := testRun(id)
	mustCreateRun(t, s, r)
	var tasks []store.Task
	for _, k := range keys {
		tasks = append(tasks, newTask(id, k, "email"))
	}
	queueTask(t, s, tasks...)
	r.Status = store.RunSuspended
	mustCommit(t, s, store.Batch{Runs: []store.Run{r}})
}

// settleWith is a settlement of a task's outcome.
func settleWith(value string, attempts int) *store.Settlement {
	return &store.Settlement{Status: store.OutcomeOK, Value: []byte(value), Attempts: attempts}
}

// wantErr fails unless err wraps want.
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s = %v, want %v", what, err, want)
	}
}

func testTaskHeartbeat(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateRun(t, s, testRun("r1"))
	a := newTask("r1", "a", "email")
	a.Timeout = 30 * sec
	queueTask(t, s, a, newTask("r1", "q", "email"))
	mustClaimTasks(t, s, "w1", taskNow, 1, "email")
	hb := func(attempt int, owner string, now int64, progress string) (store.Task, error) {
		var p []byte
		if progress != "" {
			p = []byte(progress)
		}
		return s.HeartbeatTask(ctx, "r1", "a", attempt, owner, now, taskTTL, p)
	}
	line := func(hb, expiry int64, progress string) string {
		return fmt.Sprintf(`r1.a email attempt 1 claimed visible %d owner "w1" claimed %d hb %d expiry %d progress %q err ""`,
			ts(5).UnixNano(), taskNow, hb, expiry, progress)
	}
	got, err := hb(1, "w1", taskNow+5*sec, `{"pct":50}`)
	if err != nil {
		t.Fatalf("HeartbeatTask: %v", err)
	}
	want := line(taskNow+5*sec, store.LeaseEnd(taskNow+5*sec, taskTTL, taskNow, a.Timeout), `{"pct":50}`)
	checkTask(t, "after a heartbeat", got, want)
	checkTask(t, "after a heartbeat, as stored", mustTask(t, s, "r1", "a"), want)
	// nil progress keeps the last; the lease never runs past the timeout.
	if got, err = hb(1, "w1", taskNow+25*sec, ""); err != nil {
		t.Fatalf("HeartbeatTask: %v", err)
	}
	want = line(taskNow+25*sec, taskNow+a.Timeout, `{"pct":50}`)
	checkTask(t, "after a heartbeat near the timeout (lease capped, progress kept)", got, want)
	if got, err = hb(1, "w1", taskNow+26*sec, `{"pct":90}`); err != nil {
		t.Fatalf("HeartbeatTask: %v", err)
	}
	want = line(taskNow+26*sec, taskNow+a.Timeout, `{"pct":90}`)
	checkTask(t, "after a heartbeat with new progress", got, want)

	_, err = hb(1, "w2", taskNow+27*sec, `{}`)
	wantErr(t, "HeartbeatTask by another owner", err, store.ErrConflict)
	_, err = hb(2, "w1", taskNow+27*sec, `{}`)
	wantErr(t, "HeartbeatTask of an attempt not current", err, store.ErrConflict)
	_, err = s.HeartbeatTask(ctx, "r1", "q", 1, "w1", taskNow, taskTTL, nil)
	wantErr(t, "HeartbeatTask of a queued task", err, store.ErrConflict)
	_, err = s.HeartbeatTask(ctx, "r1", "nope", 1, "w1", taskNow, taskTTL, nil)
	wantErr(t, "HeartbeatTask of an unknown key", err, store.ErrNotFound)
	_, err = s.HeartbeatTask(ctx, "ghost", "a", 1, "w1", taskNow, taskTTL, nil)
	wantErr(t, "HeartbeatTask of an unknown run", err, store.ErrNotFound)
	checkTask(t, "after refused heartbeats", mustTask(t, s, "r1", "a"), want)

	if err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "a", Attempt: 1, Owner: "w1", Now: taskNow + 28*sec, Settle: settleWith(`1`, 1)}); err != nil {
		t.Fatalf("EndTask: %v", err)
	}
	_, err = hb(1, "w1", taskNow+29*sec, `{}`)
	wantErr(t, "HeartbeatTask of a done task", err, store.ErrConflict)
}

func testTaskEndSettle(t *testing.T, s store.Store) {
	ctx := t.Context()
	suspendedWithTasks(t, s, "r1", "a", "b")
	suspendedWithTasks(t, s, "r2", "c")
	mustClaimTasks(t, s, "w1", taskNow, 10, "email")
	if rs, err := s.DueRuns(ctx, taskNow, 0); err != nil || len(rs) != 0 {
		t.Fatalf("DueRuns before any task ends = %q, %v; want none", runIDs(rs), err)
	}
	for _, bad := range []store.TaskEnd{
		{RunID: "r1", Key: "a", Attempt: 1, Owner: "w1", Now: taskNow},
		{RunID: "r1", Key: "a", Attempt: 1, Owner: "w1", Now: taskNow, Settle: settleWith(`1`, 1), Retry: &store.TaskRetry{Error: "x"}},
	} {
		if err := s.EndTask(ctx, bad); err == nil {
			t.Errorf("EndTask(settle %v, retry %v): no error", bad.Settle != nil, bad.Retry != nil)
		}
	}
	err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "nope", Attempt: 1, Owner: "w1", Now: taskNow, Settle: settleWith(`1`, 1)})
	wantErr(t, "EndTask of an unknown task", err, store.ErrNotFound)
	err = s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "a", Attempt: 1, Owner: "w2", Now: taskNow, Settle: settleWith(`1`, 1)})
	wantErr(t, "EndTask by another owner", err, store.ErrConflict)

	if err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "a", Attempt: 1, Owner: "w1", Now: taskNow + sec, Settle: settleWith(`"sent"`, 1)}); err != nil {
		t.Fatalf("EndTask(settle ok): %v", err)
	}
	if err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "b", Attempt: 1, Owner: "w1", Now: taskNow + 2*sec,
		Settle: &store.Settlement{Status: store.OutcomeError, Error: "boom", Attempts: 3}}); err != nil {
		t.Fatalf("EndTask(settle error): %v", err)
	}
	checkTask(t, "task a settled", mustTask(t, s, "r1", "a"), fmt.Sprintf(
		`r1.a email attempt 1 done visible %d owner "w1" claimed %d hb 0 expiry 0 progress "" err ""`, ts(5).UnixNano(), taskNow))
	if b := mustTask(t, s, "r1", "b"); b.State != store.TaskDone || b.LastError != "boom" {
		t.Errorf("task b settled with an error: state %s, last error %q; want done, boom", b.State, b.LastError)
	}
	sets, err := s.Settlements(ctx, "r1")
	if err != nil {
		t.Fatalf("Settlements: %v", err)
	}
	if len(sets) != 2 {
		t.Fatalf("Settlements(r1) = %+v, want a and b", sets)
	}
	if a := sets[0]; a.RunID != "r1" || a.Key != "a" || a.Status != store.OutcomeOK || string(a.Value) != `"sent"` ||
		a.Attempts != 1 || !a.CreatedAt.Equal(time.Unix(0, taskNow+sec)) {
		t.Errorf("settlement of a = %+v, want ok \"sent\" after 1 attempt, created at the end's Now", a)
	}
	if b := sets[1]; b.Key != "b" || b.Status != store.OutcomeError || b.Error != "boom" || b.Attempts != 3 {
		t.Errorf("settlement of b = %+v, want error boom after 3 attempts", b)
	}
	// The suspended run is due; the other run is not.
	if rs, err := s.DueRuns(ctx, taskNow, 0); err != nil || !slices.Equal(runIDs(rs), []string{"r1"}) {
		t.Errorf("DueRuns after the tasks of r1 ended = %q, %v; want [r1]", runIDs(rs), err)
	}
	err = s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "a", Attempt: 1, Owner: "w1", Now: taskNow + 3*sec, Settle: settleWith(`"again"`, 1)})
	wantErr(t, "EndTask of a done task", err, store.ErrConflict)
	if sets, _ := s.Settlements(ctx, "r1"); len(sets) != 2 || string(sets[0].Value) != `"sent"` {
		t.Errorf("Settlements after a refused end = %+v, want the first two unchanged", sets)
	}
}

func testTaskEndRetry(t *testing.T, s store.Store) {
	ctx := t.Context()
	suspendedWithTasks(t, s, "r1", "a")
	mustClaimTasks(t, s, "w1", taskNow, 1, "email")
	backoff := taskNow + 5*sec
	if err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "a", Attempt: 1, Owner: "w1", Now: taskNow + sec,
		Retry: &store.TaskRetry{Error: "timeout", VisibleAt: backoff}}); err != nil {
		t.Fatalf("EndTask(retry): %v", err)
	}
	want := fmt.Sprintf(`r1.a email attempt 2 queued visible %d owner "w1" claimed %d hb 0 expiry 0 progress "" err "timeout"`, backoff, taskNow)
	checkTask(t, "after a retry", mustTask(t, s, "r1", "a"), want)
	if sets, _ := s.Settlements(ctx, "r1"); len(sets) != 0 {
		t.Errorf("Settlements after a retry = %+v, want none", sets)
	}
	if got := mustClaimTasks(t, s, "w2", backoff-1, 1, "email"); len(got) != 0 {
		t.Fatalf("ClaimTasks before the backoff ends = %q, want none", taskIDs(got))
	}
	got := mustClaimTasks(t, s, "w2", backoff, 1, "email")
	if len(got) != 1 || got[0].Attempt != 2 || got[0].Owner != "w2" || got[0].LastError != "timeout" {
		t.Fatalf("ClaimTasks after the backoff = %+v, want r1.a attempt 2 for w2", got)
	}
	want = taskLine(got[0])

	// A late end or heartbeat of attempt 1 conflicts and changes nothing.
	err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "a", Attempt: 1, Owner: "w1", Now: backoff + sec, Settle: settleWith(`"late"`, 1)})
	wantErr(t, "EndTask of attempt 1 after attempt 2 was claimed", err, store.ErrConflict)
	err = s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "a", Attempt: 1, Now: backoff + sec, Retry: &store.TaskRetry{Error: "late"}})
	wantErr(t, "EndTask(retry) of attempt 1 by any holder", err, store.ErrConflict)
	_, err = s.HeartbeatTask(ctx, "r1", "a", 1, "w1", backoff+sec, taskTTL, []byte(`{}`))
	wantErr(t, "HeartbeatTask of attempt 1", err, store.ErrConflict)
	checkTask(t, "after late calls of attempt 1", mustTask(t, s, "r1", "a"), want)
	if sets, _ := s.Settlements(ctx, "r1"); len(sets) != 0 {
		t.Errorf("Settlements after a late end = %+v, want none", sets)
	}
	if rs, _ := s.DueRuns(ctx, backoff+sec, 0); len(rs) != 0 {
		t.Errorf("DueRuns after a late end = %q, want none", runIDs(rs))
	}

	if err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "a", Attempt: 2, Owner: "w2", Now: backoff + 2*sec, Settle: settleWith(`"ok"`, 2)}); err != nil {
		t.Fatalf("EndTask of attempt 2: %v", err)
	}
	if sets, _ := s.Settlements(ctx, "r1"); len(sets) != 1 || sets[0].Attempts != 2 || string(sets[0].Value) != `"ok"` {
		t.Errorf("Settlements after attempt 2 = %+v, want \"ok\" after 2 attempts", sets)
	}
}

func testTaskEndExpired(t *testing.T, s store.Store) {
	ctx := t.Context()
	suspendedWithTasks(t, s, "r1", "a", "b")
	mustClaimTasks(t, s, "w1", taskNow, 2, "email")
	expiry := taskNow + int64(taskTTL)
	sweep := func(key string, now int64) error {
		return s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: key, Attempt: 1, Expired: true, Now: now,
			Retry: &store.TaskRetry{Error: "lease expired", VisibleAt: now}})
	}
	before := taskLine(mustTask(t, s, "r1", "a"))
	wantErr(t, "EndTask(expired) while the lease is live", sweep("a", expiry-1), store.ErrConflict)
	checkTask(t, "after a refused sweep", mustTask(t, s, "r1", "a"), before)
	if got, err := s.ExpiredTasks(ctx, expiry-1, 10); err != nil || len(got) != 0 {
		t.Errorf("ExpiredTasks before the expiry = %q, %v; want none", taskIDs(got), err)
	}
	if got, err := s.ExpiredTasks(ctx, expiry, 10); err != nil || !slices.Equal(taskIDs(got), []string{"r1.a", "r1.b"}) {
		t.Errorf("ExpiredTasks at the expiry = %q, %v; want [r1.a r1.b]", taskIDs(got), err)
	}
	if err := sweep("a", expiry); err != nil {
		t.Fatalf("EndTask(expired) at the expiry: %v", err)
	}
	checkTask(t, "after the sweep", mustTask(t, s, "r1", "a"), fmt.Sprintf(
		`r1.a email attempt 2 queued visible %d owner "w1" claimed %d hb 0 expiry 0 progress "" err "lease expired"`, expiry, taskNow))
	// Until the sweep ends it, the holder of an expired lease may still end
	// its attempt.
	if err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "b", Attempt: 1, Owner: "w1", Now: expiry + sec, Settle: settleWith(`1`, 1)}); err != nil {
		t.Fatalf("EndTask by the holder of an expired lease before the sweep: %v", err)
	}
	wantErr(t, "EndTask(expired) of a done task", sweep("b", expiry+2*sec), store.ErrConflict)
	if got, _ := s.ExpiredTasks(ctx, expiry+time.Hour.Nanoseconds(), 10); len(got) != 0 {
		t.Errorf("ExpiredTasks with none claimed = %q, want none", taskIDs(got))
	}
}

func testExpiredTasksOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateRun(t, s, testRun("r1"))
	mustCreateRun(t, s, testRun("r2"))
	queueTask(t, s, newTask("r1", "a", "email"), newTask("r1", "b", "email"), newTask("r2", "c", "email"),
		newTask("r2", "d", "email"), newTask("r2", "e", "email"))
	// Claimed one at a time in fair order (a, c, b, d), each with its own
	// lease; e stays queued.
	for _, c := range []struct {
		id  string
		ttl time.Duration
	}{{"r1.a", 30 * time.Second}, {"r2.c", 10 * time.Second}, {"r1.b", 20 * time.Second}, {"r2.d", 40 * time.Second}} {
		got, err := s.ClaimTasks(ctx, store.TaskClaim{Owner: "w", Names: []string{"email"}, Max: 1, Now: taskNow, TTL: c.ttl})
		if err != nil || !slices.Equal(taskIDs(got), []string{c.id}) {
			t.Fatalf("ClaimTasks(max 1) = %q, %v; want [%s]", taskIDs(got), err, c.id)
		}
	}
	for _, tc := range []struct {
		now   int64
		limit int
		want  []string
	}{
		{taskNow + 35*sec, 10, []string{"r2.c", "r1.b", "r1.a"}},
		{taskNow + 35*sec, 2, []string{"r2.c", "r1.b"}},
		{taskNow + 10*sec, 10, []string{"r2.c"}},
		{taskNow + 10*sec - 1, 10, nil},
	} {
		got, err := s.ExpiredTasks(ctx, tc.now, tc.limit)
		if err != nil {
			t.Fatalf("ExpiredTasks: %v", err)
		}
		if ids := taskIDs(got); !slices.Equal(ids, tc.want) {
			t.Errorf("ExpiredTasks(now+%ds, %d) = %q, want %q", (tc.now-taskNow)/sec, tc.limit, ids, tc.want)
		}
	}
}

func testTaskCancel(t *testing.T, s store.Store) {
	ctx := t.Context()
	suspendedWithTasks(t, s, "r1", "done", "claimed")
	suspendedWithTasks(t, s, "r2", "other")
	mustClaimTasks(t, s, "w1", taskNow, 2, "email") // r1.done, r2.other (fair order)
	mustClaimTasks(t, s, "w1", taskNow, 1, "email") // r1.claimed
	mustCommit(t, s, store.Batch{Tasks: []store.Task{newTask("r1", "queued", "email")}})
	if err := s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "done", Attempt: 1, Owner: "w1", Now: taskNow, Settle: settleWith(`1`, 1)}); err != nil {
		t.Fatalf("EndTask: %v", err)
	}
	if err := s.CancelTasks(ctx, "r1", "run canceled: stop"); err != nil {
		t.Fatalf("CancelTasks: %v", err)
	}
	var states []string
	for _, tk := range append(mustTasks(t, s, "r1"), mustTasks(t, s, "r2")...) {
		states = append(states, fmt.Sprintf("%s %s %q", tk.IdempotencyKey(), tk.State, tk.LastError))
	}
	want := []string{`r1.done done ""`, `r1.claimed canceled "run canceled: stop"`, `r1.queued canceled "run canceled: stop"`, `r2.other claimed ""`}
	if !slices.Equal(states, want) {
		t.Errorf("tasks after CancelTasks(r1):\n got  %q\n want %q", states, want)
	}
	_, err := s.HeartbeatTask(ctx, "r1", "claimed", 1, "w1", taskNow+sec, taskTTL, nil)
	wantErr(t, "HeartbeatTask of a canceled task", err, store.ErrConflict)
	err = s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "claimed", Attempt: 1, Owner: "w1", Now: taskNow + sec, Settle: settleWith(`1`, 1)})
	wantErr(t, "EndTask of a canceled task", err, store.ErrConflict)
	err = s.EndTask(ctx, store.TaskEnd{RunID: "r1", Key: "claimed", Attempt: 1, Expired: true, Now: taskNow + time.Hour.Nanoseconds(), Retry: &store.TaskRetry{}})
	wantErr(t, "EndTask(expired) of a canceled task", err, store.ErrConflict)
	if got := mustClaimTasks(t, s, "w2", taskNow+time.Hour.Nanoseconds(), 10, "email"); len(got) != 0 {
		t.Errorf("ClaimTasks after CancelTasks = %q, want none (canceled tasks are not handed out)", taskIDs(got))
	}
	if got, _ := s.ExpiredTasks(ctx, taskNow+time.Hour.Nanoseconds(), 10); !slices.Equal(taskIDs(got), []string{"r2.other"}) {
		t.Errorf("ExpiredTasks after CancelTasks = %q, want [r2.other]", taskIDs(got))
	}
	if sets, _ := s.Settlements(ctx, "r1"); len(sets) != 1 || sets[0].Key != "done" {
		t.Errorf("Settlements(r1) after CancelTasks = %+v, want the done task's only", sets)
	}
}

// testTaskEndRacesSuspend ends tasks with their outcome while their runs
// commit their suspension: whichever commits second sees the other, so
// every run is due after both.
func testTaskEndRacesSuspend(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("r%02d", i)
		mustCreateRun(t, s, testRun(id))
		running := mustRun(t, s, id)
		running.Status = store.RunRunning
		mustCommit(t, s, store.Batch{Runs: []store.Run{running}, Outcomes: []store.RunOutcome{pendingCall(id, "a", "email")},
			Tasks: []store.Task{newTask(id, "a", "email")}})
		if got := mustClaimTasks(t, s, "w", taskNow, 1, "email"); !slices.Equal(taskIDs(got), []string{id + ".a"}) {
			t.Fatalf("ClaimTasks = %q, want [%s.a]", taskIDs(got), id)
		}
		suspend := running
		suspend.Status, suspend.WakeAt = store.RunSuspended, 1<<62
		wg.Go(func() {
			if err := s.Commit(ctx, store.Batch{Runs: []store.Run{suspend}}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := s.EndTask(ctx, store.TaskEnd{RunID: id, Key: "a", Attempt: 1, Owner: "w", Now: taskNow, Settle: settleWith(`1`, 1)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rs, err := s.DueRuns(ctx, taskNow, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := runIDs(rs); len(got) != n {
		t.Errorf("%d of %d runs due after a task's end raced their suspension: %q", len(got), n, got)
	}
}
