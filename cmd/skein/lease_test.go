package main

// End-to-end tests of the rule that a run is executed by one process at a
// time and that what it recorded never changes: two `skein run --id X`
// at once on one database, and `skein run --id X` on the database of a
// `skein serve` that executes or executed X, on SQLite and on Postgres.
// The workflow (testdata/workflows/lottery) draws real randomness in step
// bodies that take real time, so a second execution records different
// values, and prints a line per body execution, which the tests count in
// the output of the `skein run` processes (--guest-output).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// lotteryWorkflows is the package of the lottery workflow.
const lotteryWorkflows = "./testdata/workflows/lottery"

// journal is what a test watches of a run: each settled outcome's
// "status value error" by key, and once the run has ended (completed,
// failed or canceled) its "status result error" under the key "(run)".
type journal map[string]string

// backend is a store the CLI is pointed at, and a way to read a run's
// journal from it directly.
type backend struct {
	name  string
	flags []string                                               // --db FILE or --store URL
	read  func(ctx context.Context, run string) (journal, error) // nil journal when the run does not exist yet
}

// sqliteBackend is a new SQLite file.
func sqliteBackend(t *testing.T) backend {
	path := filepath.Join(t.TempDir(), "skein.db")
	return backend{name: "sqlite", flags: []string{"--db", path}, read: func(ctx context.Context, run string) (journal, error) {
		db, err := openRO(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		defer db.Close()
		return readJournal(ctx, func(q string, args ...any) (rowsLike, error) { return db.QueryContext(ctx, q, args...) }, run, "?")
	}}
}

// postgresBackend is a new schema of $SKEIN_TEST_POSTGRES.
func postgresBackend(t *testing.T) backend {
	dsn := postgresSchema(t)
	return backend{name: "postgres", flags: []string{"--store", dsn}, read: func(ctx context.Context, run string) (journal, error) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		return readJournal(ctx, func(q string, args ...any) (rowsLike, error) {
			rows, err := conn.Query(ctx, q, args...)
			return pgRows{rows}, err
		}, run, "$1")
	}}
}

// rowsLike is what readJournal needs of *sql.Rows and pgx.Rows.
type rowsLike interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close() error
}

type pgRows struct{ pgx.Rows }

func (r pgRows) Close() error { r.Rows.Close(); return nil }

var _ rowsLike = (*sql.Rows)(nil)

// readJournal reads run's journal with query; param is the dialect's
// first placeholder.
func readJournal(ctx context.Context, query func(string, ...any) (rowsLike, error), run, param string) (journal, error) {
	j := journal{}
	rows, err := query(`SELECT status, result, error FROM runs WHERE id = `+param, run)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "does not exist") {
			return nil, nil // not migrated yet
		}
		return nil, err
	}
	found := false
	for rows.Next() {
		var status, errText string
		var result []byte
		if err := rows.Scan(&status, &result, &errText); err != nil {
			rows.Close()
			return nil, err
		}
		found = true
		if status == "completed" || status == "failed" || status == "canceled" {
			j["(run)"] = fmt.Sprintf("%s %s %q", status, result, errText)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	if !found {
		return nil, nil
	}
	rows, err = query(`SELECT key, status, value, error FROM outcomes WHERE run_id = `+param+` AND status <> 'pending'`, run)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var key, status, errText string
		var value []byte
		if err := rows.Scan(&key, &status, &value, &errText); err != nil {
			rows.Close()
			return nil, err
		}
		j[key] = fmt.Sprintf("%s %s %q", status, value, errText)
	}
	return j, errors.Join(rows.Err(), rows.Close())
}

// journalWatch polls a run's journal and remembers the first value seen
// of every key and every later change of it.
type journalWatch struct {
	mu      sync.Mutex
	first   journal
	last    journal
	changes []string
	reads   int
	errs    []string
	stop    chan struct{}
	done    chan struct{}
}

// watchJournal polls b's journal of run every 10 ms until stopped.
func watchJournal(b backend, run string) *journalWatch {
	w := &journalWatch{first: journal{}, last: journal{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			w.observe(b, run)
			select {
			case <-w.stop:
				w.observe(b, run) // the final state
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *journalWatch) observe(b backend, run string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	j, err := b.read(ctx, run)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if len(w.errs) < 5 {
			w.errs = append(w.errs, err.Error())
		}
		return
	}
	w.reads++
	for k, v := range j {
		old, seen := w.first[k]
		switch {
		case !seen:
			w.first[k] = v
		case w.last[k] != v:
			w.changes = append(w.changes, fmt.Sprintf("%s: first %s, then %s", k, old, v))
		}
		w.last[k] = v
	}
	for k, v := range w.last {
		if _, ok := j[k]; !ok && j != nil && v != "(gone)" {
			w.changes = append(w.changes, fmt.Sprintf("%s: first %s, then gone", k, w.first[k]))
			w.last[k] = "(gone)"
		}
	}
}

// finish stops the watch and fails the test if any recorded value
// changed. It returns the final journal.
func (w *journalWatch) finish(t *testing.T) journal {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.changes) > 0 {
		t.Errorf("recorded values changed after they were first read (%d reads):\n%s", w.reads, strings.Join(w.changes, "\n"))
	}
	if w.reads == 0 {
		t.Errorf("the journal was never read: %q", w.errs)
	}
	return maps.Clone(w.first)
}

// bgSkein is a skein process started in the background.
type bgSkein struct {
	args           []string
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
	err            error
	start          time.Time
	elapsed        time.Duration
}

// startSkein starts skein with args; wait collects it.
func startSkein(t *testing.T, args ...string) *bgSkein {
	t.Helper()
	p := &bgSkein{args: args, cmd: exec.Command(skeinBin, args...), done: make(chan struct{}), start: time.Now()}
	p.cmd.Dir = t.TempDir()
	p.cmd.Env = cleanEnv()
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.elapsed = time.Since(p.start)
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the process (at most 2*cmdTimeout) and returns what it did.
func (p *bgSkein) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * cmdTimeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("skein %s: did not finish within %v\nstderr:\n%s", strings.Join(p.args, " "), 2*cmdTimeout, p.stderr.String())
	}
	r := result{args: p.args, stdout: p.stdout.String(), stderr: p.stderr.String(), elapsed: p.elapsed}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		r.code = ee.ExitCode()
	} else if p.err != nil {
		t.Fatalf("skein %s: %v", strings.Join(p.args, " "), p.err)
	}
	t.Logf("skein %s: exit %d in %v", strings.Join(p.args, " "), r.code, r.elapsed.Round(time.Millisecond))
	return r
}

// bodies returns the step bodies a process executed, by draw number, from
// the lines the lottery workflow prints ("lottery-body {i} {value}").
func bodies(r result) map[int][]string {
	out := map[int][]string{}
	for _, line := range strings.Split(r.stderr, "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && strings.HasPrefix(f[0], "[") { // --guest-output's "[RUN] " prefix
			f = f[1:]
		}
		if len(f) == 3 && f[0] == "lottery-body" {
			i, _ := strconv.Atoi(f[1])
			out[i] = append(out[i], f[2])
		}
	}
	return out
}

// lotteryArgs is `skein run` of the lottery workflow as run id with n
// draws of ms each, on b, with its guest output on stderr.
func lotteryArgs(wasm string, b backend, id string, n, ms int, extra ...string) []string {
	args := []string{"run", wasm, "--id", id, "--input", fmt.Sprintf(`{"n":%d,"ms":%d}`, n, ms), "--guest-output"}
	return append(append(args, b.flags...), extra...)
}

// checkLotteryRun checks that r printed (as JSON) the run as the final
// journal holds it: completed with n draws, each the value recorded.
func checkLotteryRun(t *testing.T, r result, final journal, n int) {
	t.Helper()
	if r.code != 0 {
		t.Errorf("want exit 0\n%s", r)
		return
	}
	v := decodeRun(t, r)
	want := final["(run)"]
	if got := fmt.Sprintf("%s %s %q", v.Status, v.Result, v.errorText()); v.Status != "completed" || !jsonRunEq(got, want) {
		t.Errorf("printed run: %s; the database holds %s\n%s", got, want, r)
	}
	var res []string
	if err := json.Unmarshal(v.Result, &res); err != nil || len(res) != n {
		t.Errorf("result %s: want %d draws", v.Result, n)
	}
	for _, o := range v.Outcomes {
		got := fmt.Sprintf("%s %s %q", o.Status, o.Value, o.errorText())
		if w, ok := final[o.Key]; !ok || !jsonRunEq(got, w) {
			t.Errorf("printed outcome %s: %s; the database holds %s", o.Key, got, w)
		}
	}
}

func (o outcomeJSON) errorText() string {
	if o.Error == nil {
		return ""
	}
	return *o.Error
}

// jsonRunEq compares "status JSON error" texts, the JSON as values.
func jsonRunEq(a, b string) bool {
	fa, fb := strings.SplitN(a, " ", 2), strings.SplitN(b, " ", 2)
	if len(fa) != 2 || len(fb) != 2 || fa[0] != fb[0] {
		return false
	}
	ia, ib := strings.LastIndex(fa[1], " "), strings.LastIndex(fb[1], " ")
	if ia < 0 || ib < 0 || fa[1][ia:] != fb[1][ib:] {
		return false
	}
	var x, y any
	if json.Unmarshal([]byte(fa[1][:ia]), &x) != nil || json.Unmarshal([]byte(fb[1][:ib]), &y) != nil {
		return fa[1][:ia] == fb[1][:ib]
	}
	return reflect.DeepEqual(x, y)
}

// checkBodiesOnce fails unless the draws 1..n executed once each, over
// all the processes' outputs.
func checkBodiesOnce(t *testing.T, n int, rs ...result) {
	t.Helper()
	all := map[int][]string{}
	for _, r := range rs {
		for i, vs := range bodies(r) {
			all[i] = append(all[i], vs...)
		}
	}
	for i := 1; i <= n; i++ {
		if len(all[i]) != 1 {
			t.Errorf("the body of draw %d executed %d times (values %q); want once", i, len(all[i]), all[i])
		}
	}
	if len(all) != n {
		t.Errorf("bodies executed for draws %v; want 1..%d", slices.Sorted(maps.Keys(all)), n)
	}
}

func TestRunConcurrentSQLite(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "skein run processes racing for one run's lease")
	testRunConcurrent(t, sqliteBackend(t))
}
func TestRunConcurrentPostgres(t *testing.T) { testRunConcurrent(t, postgresBackend(t)) }

// testRunConcurrent: two `skein run --id X` at once on one database. One
// executes the run; the other waits for it and prints the stored run.
// Every body executes once, no recorded value ever changes, and both
// print the run as stored.
func testRunConcurrent(t *testing.T, b backend) {
	wasm := wasmbuild.Build(t, lotteryWorkflows)
	const id, n, ms = "lot-1", 5, 300
	w := watchJournal(b, id)
	p1 := startSkein(t, lotteryArgs(wasm, b, id, n, ms, "--json")...)
	p2 := startSkein(t, lotteryArgs(wasm, b, id, n, ms, "--json")...)
	r1, r2 := p1.wait(t), p2.wait(t)
	final := w.finish(t)
	if final["(run)"] == "" {
		t.Fatalf("the run did not end in the database: %q\n%s\n%s", final, r1, r2)
	}
	checkBodiesOnce(t, n, r1, r2)
	checkLotteryRun(t, r1, final, n)
	checkLotteryRun(t, r2, final, n)
	if len(final) != n+1 {
		t.Errorf("journal %q: want %d settled outcomes and the run", final, n)
	}
}

func TestRunAgainstServeSQLite(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "skein run against a server holding the run's lease")
	testRunAgainstServe(t, sqliteBackend(t))
}
func TestRunAgainstServePostgres(t *testing.T) { testRunAgainstServe(t, postgresBackend(t)) }

// testRunAgainstServe: `skein run --id X` on the database of a running
// `skein serve`: first while the server executes X (it waits for the
// server, then prints the stored run, and executes no body), then once X
// has completed (it prints the stored run at once), then for a new run
// the server may claim as well (one of the two executes it). Nothing
// recorded ever changes, and what skein run prints is what is stored.
func testRunAgainstServe(t *testing.T, b backend) {
	wasm := wasmbuild.Build(t, lotteryWorkflows)
	s := startServe(t, b.flags, nil, "--poll", "50ms")
	data, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "deploy", s.call(t, "POST", "/v1/modules?name=lottery", "", data), 201, "")
	// Long enough (6 s) for skein run to compile the module and reach the
	// run while the server still executes it.
	const id, n, ms = "lot-srv", 15, 400
	want(t, "start", s.call(t, "POST", "/v1/runs", "", map[string]any{
		"module": "lottery", "workflow": "lottery", "input": map[string]int{"n": n, "ms": ms}, "id": id}), 201, "")
	// Wait for the server to be mid-way: its first draw recorded.
	deadline := time.Now().Add(runWait)
	for len(s.outcomes(t, id, "").Outcomes) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server recorded nothing of %s in %v", id, runWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w := watchJournal(b, id)
	during := skein(t, "", lotteryArgs(wasm, b, id, n, ms, "--json")...)
	s.awaitStatus(t, id, "", "completed")
	final := w.finish(t)
	checkBodiesOnce(t, 0, during)
	checkLotteryRun(t, during, final, n)
	if !strings.Contains(during.stderr, "is being executed by worker") || !strings.Contains(during.stderr, "waiting up to") {
		t.Errorf("skein run did not say that it waits for the server's worker\n%s", during)
	}
	if len(final) != n+1 {
		t.Errorf("journal %q: want %d settled outcomes and the run", final, n)
	}

	// The run has completed: it is printed as stored, nothing executes.
	w = watchJournal(b, id)
	after := skein(t, "", lotteryArgs(wasm, b, id, n, ms)...)
	if again := w.finish(t); !reflect.DeepEqual(again, final) {
		t.Errorf("journal changed by a run of a completed run\nbefore: %q\nafter:  %q", final, again)
	}
	wantExit(t, after, 0, "run "+id+" was already completed", "nothing executed")
	checkBodiesOnce(t, 0, after)
	if r := s.outcomes(t, id, ""); !jsonEq(t, r.Result, string(decodeRun(t, during).Result)) {
		t.Errorf("the server answers result %s; skein run printed %s", r.Result, decodeRun(t, during).Result)
	}

	// A new run started by skein run, which the server's workers see too:
	// whichever takes it first executes it, the other leaves it alone.
	const fresh, fn = "lot-new", 6
	w = watchJournal(b, fresh)
	mine := skein(t, "", lotteryArgs(wasm, b, fresh, fn, ms, "--json")...)
	s.awaitStatus(t, fresh, "", "completed")
	final = w.finish(t)
	checkLotteryRun(t, mine, final, fn)
	for i, vs := range bodies(mine) {
		if len(vs) != 1 {
			t.Errorf("skein run executed the body of draw %d %d times; want at most once", i, len(vs))
		}
	}
	s.stop(t)
}
