package main

// End-to-end tests of schedules (docs/schedules.md) through real
// `skein serve` processes: each slot of a one-second cron starts exactly
// one run under two workers sharing a Postgres database, and a server
// restarted after downtime starts the slots it missed within the
// catch-up window, once each, and counts the older ones.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/server"
)

// slotRun is a run a schedule started, with its slot.
type slotRun struct {
	slot time.Time
	run  server.Run
}

// scheduleRuns lists the runs of schedule name through the API, by slot.
// A run whose id is not a slot's fails the test.
func scheduleRuns(t *testing.T, s *skeinServer, name string) []slotRun {
	t.Helper()
	r := s.call(t, "GET", "/v1/runs?limit=1000", "", nil)
	if r.status != 200 {
		t.Fatalf("GET /v1/runs: %s", r)
	}
	var l server.RunList
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	var out []slotRun
	prefix := "sched:" + name + "@"
	for _, run := range l.Runs {
		if !strings.HasPrefix(run.ID, prefix) {
			continue
		}
		slot, err := time.Parse(time.RFC3339, strings.TrimPrefix(run.ID, prefix))
		if err != nil {
			t.Fatalf("run %s: the id does not name a slot: %v", run.ID, err)
		}
		out = append(out, slotRun{slot: slot, run: run})
	}
	slices.SortFunc(out, func(a, b slotRun) int { return a.slot.Compare(b.slot) })
	return out
}

// runSlots lists the slots of runs as clock times, for failure messages.
func runSlots(runs []slotRun) []string {
	out := make([]string, len(runs))
	for i, sr := range runs {
		out[i] = sr.slot.UTC().Format(time.TimeOnly)
	}
	return out
}

// getSchedule reads a schedule through the API.
func getSchedule(t *testing.T, s *skeinServer, name string) server.Schedule {
	t.Helper()
	return getScheduleToken(t, s, name, "")
}

// getScheduleToken is getSchedule with a token.
func getScheduleToken(t *testing.T, s *skeinServer, name, token string) server.Schedule {
	t.Helper()
	r := s.call(t, "GET", "/v1/schedules/"+name, token, nil)
	if r.status != 200 {
		t.Fatalf("GET schedule %s: %s", name, r)
	}
	return decodeJSON[server.Schedule](t, "schedule "+name, r.body)
}

// countLines counts the lines of text that contain every one of subs.
func countLines(text string, subs ...string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

// TestScheduleClusterExactlyOnce: a one-second cron under two workers on
// one Postgres database starts each of 30 slots exactly once: one run per
// slot, no slot missing, and one "started" line over both workers' logs
// per run (a run id is created once, whoever fires the slot).
func TestScheduleClusterExactlyOnce(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "30 one-second slots of a schedule under two workers (about 35 s)")
	dsn := postgresSchema(t)
	w1 := startClusterWorker(t, dsn, "w1")
	w2 := startClusterWorker(t, dsn, "w2")
	deployServerModule(t, w1.skeinServer, nil)
	r := w2.cli(t, nil, "schedule", "create", "tick", "--cron", "* * * * * *", "--module", "srv", "--workflow", "echo",
		"--input", `{"n":1}`, "--overlap", "allow", "--catchup", "10s", "--json")
	wantExit(t, r, 0)
	created := decodeJSON[server.Schedule](t, "schedule create --json", []byte(r.stdout))
	if len(created.Next) != 3 || created.Next[1].Sub(created.Next[0]) != time.Second || created.Overlap != "allow" || created.Catchup != "10s" {
		t.Fatalf("created %+v; want 3 next slots a second apart, overlap allow, catchup 10s", created)
	}
	const slots = 30
	time.Sleep(time.Until(created.Next[0].Add((slots - 1) * time.Second)))
	// Wait for the 30th slot's run, then stop the schedule.
	deadline := time.Now().Add(10 * time.Second)
	for len(scheduleRuns(t, w1.skeinServer, "tick")) < slots && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	wantExit(t, w1.cli(t, nil, "schedule", "pause", "tick"), 0, "schedule tick paused")
	// A step decided before the pause may still start its run: wait until
	// every slot counted as fired has its run (bounded).
	runs, sc := scheduleRuns(t, w2.skeinServer, "tick"), getSchedule(t, w1.skeinServer, "tick")
	for deadline := time.Now().Add(10 * time.Second); sc.Fired != int64(len(runs)) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		runs, sc = scheduleRuns(t, w2.skeinServer, "tick"), getSchedule(t, w1.skeinServer, "tick")
	}
	if len(runs) < slots {
		t.Fatalf("%d runs after %d slots: %v%s", len(runs), slots, runSlots(runs), clusterTails(w1, w2))
	}
	// The first slot is the first after the schedule's creation: the
	// created schedule's Next[0], or an earlier one when the response was
	// made after that slot had passed (a loaded machine).
	first := runs[0].slot
	if first.Before(created.CreatedAt) || first.After(created.Next[0]) {
		t.Fatalf("the first run is for slot %s; want the first slot after the creation at %s (next was %s)", first, created.CreatedAt, created.Next[0])
	}
	for i, sr := range runs {
		if want := first.Add(time.Duration(i) * time.Second); !sr.slot.Equal(want) {
			t.Fatalf("run %d is for slot %s, want %s: a slot is missing or doubled: %v%s", i, sr.slot, want, runSlots(runs), clusterTails(w1, w2))
		}
	}
	if sc.Fired != int64(len(runs)) || sc.Missed != 0 || sc.Overlapped != 0 || !sc.Paused {
		t.Errorf("schedule: fired %d, missed %d, overlapped %d, paused %v; want fired %d (the runs), 0, 0, true", sc.Fired, sc.Missed, sc.Overlapped, sc.Paused, len(runs))
	}
	if sc.LastRun != runs[len(runs)-1].run.ID {
		t.Errorf("last run %q, want %q", sc.LastRun, runs[len(runs)-1].run.ID)
	}
	n1 := countLines(w1.stderr.String(), "scheduler: started the run of a slot", "schedule=tick")
	n2 := countLines(w2.stderr.String(), "scheduler: started the run of a slot", "schedule=tick")
	if n1+n2 != len(runs) {
		t.Errorf("the workers' logs say %d+%d runs started; want %d, one per slot%s", n1, n2, len(runs), clusterTails(w1, w2))
	}
	t.Logf("%d slots: w1 started %d runs, w2 %d", len(runs), n1, n2)
	for _, sr := range runs {
		run := w1.awaitStatus(t, sr.run.ID, "", "completed")
		if string(run.Result) != `{"n":1}` {
			t.Fatalf("run %s: result %s, want the schedule's input", run.ID, run.Result)
		}
	}
}

// TestScheduleCatchup: a server stopped for 6 s and restarted starts the
// slots of the downtime that are within the catch-up window (3 s), once
// each and in order, at once; older ones are skipped and counted as
// missed. Every slot is either started or counted, never both.
func TestScheduleCatchup(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "a server stopped and restarted around a schedule's slots (about 12 s)")
	db := t.TempDir() + "/skein.db"
	s := startServer(t, db, nil, "--poll", "50ms", "--grace", "1s")
	deployServerModule(t, s, nil)
	r := s.cli(t, nil, "schedule", "create", "tick", "--cron", "* * * * * *", "--module", "srv", "--workflow", "echo",
		"--overlap", "allow", "--catchup", "3s", "--json")
	wantExit(t, r, 0)
	first := decodeJSON[server.Schedule](t, "schedule create --json", []byte(r.stdout)).Next[0]
	time.Sleep(time.Until(first.Add(1500 * time.Millisecond)))
	before := len(scheduleRuns(t, s, "tick"))
	s.stop(t)
	stopped := time.Now()
	if before < 2 {
		t.Fatalf("%d runs before the stop; want 2", before)
	}
	time.Sleep(6 * time.Second)
	s = startServer(t, db, nil, "--poll", "50ms", "--grace", "1s")
	restarted := time.Now()
	time.Sleep(2 * time.Second)
	wantExit(t, s.cli(t, nil, "schedule", "pause", "tick"), 0)
	time.Sleep(500 * time.Millisecond)

	runs := scheduleRuns(t, s, "tick")
	sc := getSchedule(t, s, "tick")
	last := runs[len(runs)-1].slot
	total := int(last.Sub(first)/time.Second) + 1 // slots from the first to the last started
	if sc.Missed < 1 || int(sc.Fired)+int(sc.Missed) != total || len(runs) != int(sc.Fired) {
		t.Fatalf("%d slots from %s to %s: %d runs, schedule fired %d, missed %d; want every slot started or missed, once, and >= 1 missed",
			total, first, last, len(runs), sc.Fired, sc.Missed)
	}
	var caughtUp []slotRun
	for _, sr := range runs {
		if sr.slot.After(stopped) && sr.slot.Before(restarted) {
			caughtUp = append(caughtUp, sr)
		}
	}
	if len(caughtUp) < 2 {
		t.Fatalf("%d slots of the downtime started after the restart; want >= 2 (a 3s window)\nruns: %v", len(caughtUp), runs)
	}
	for i, sr := range caughtUp {
		if sr.run.CreatedAt.Before(restarted) {
			t.Errorf("run %s created %s, before the restart", sr.run.ID, sr.run.CreatedAt)
		}
		if i > 0 && sr.run.CreatedAt.Before(caughtUp[i-1].run.CreatedAt) {
			t.Errorf("caught-up run %s was created before %s: not in slot order", sr.run.ID, caughtUp[i-1].run.ID)
		}
		if restarted.Sub(sr.slot) > 3*time.Second+time.Second {
			t.Errorf("slot %s started, older than the 3s window at the restart (%s)", sr.slot, restarted)
		}
	}
	t.Logf("runs %d before the stop, %d caught up after it, %d missed; %d in all", before, len(caughtUp), sc.Missed, len(runs))
}

// listed joins the numbers from lo to hi with commas: a cron field that
// names each value.
func listed(lo, hi int) string {
	var s []string
	for i := lo; i <= hi; i++ {
		s = append(s, strconv.Itoa(i))
	}
	return strings.Join(s, ",")
}

// TestScheduleCronLength: a valid cron expression over 256 bytes is
// refused with 400 naming the limit, and nothing is stored; one under
// it is accepted.
func TestScheduleCronLength(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/skein.db", nil)
	deployServerModule(t, s, nil)
	under := "0 " + listed(0, 59) + " " + listed(0, 23) + " * * *"                    // 239 bytes
	over := "0 " + listed(0, 59) + " " + listed(0, 23) + " " + listed(1, 31) + " * *" // 321 bytes
	wantExit(t, s.cli(t, nil, "schedule", "create", "long", "--cron", over, "--module", "srv", "--workflow", "echo"), 1,
		"HTTP 400", fmt.Sprintf("cron expression of %d bytes: the limit is 256 bytes (host.MaxCronLen)", len(over)))
	if l := decodeJSON[server.ScheduleList](t, "schedules", s.call(t, "GET", "/v1/schedules", "", nil).body); len(l.Schedules) != 0 {
		t.Errorf("schedules after a refused one: %+v; want none", l.Schedules)
	}
	wantExit(t, s.cli(t, nil, "schedule", "create", "every-minute", "--cron", under, "--module", "srv", "--workflow", "echo"), 0, "schedule every-minute created")
}
