package main

// End-to-end tests of the skein CLI: each test runs the real skein binary
// as a subprocess against real wasm modules built from this repository
// and a real SQLite file, and checks exit codes, output and the database.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"

	_ "modernc.org/sqlite" // the "sqlite" driver, to read the database the CLI writes
)

// skeinBin is the skein binary built by TestMain.
var skeinBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skein-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skeinBin = filepath.Join(dir, "skein")
	cmd := exec.Command("go", "build", "-o", skeinBin, "./cmd/skein")
	cmd.Dir = wasmbuild.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build skein: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cmdTimeout bounds every skein subprocess.
const cmdTimeout = 30 * time.Second

// result is what one skein invocation did.
type result struct {
	args           []string
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("skein %s: exit %d (%v)\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
}

// skein runs the skein binary with args in dir (a temporary folder when
// empty) and returns what it did. It fails the test if the process cannot
// be started or does not exit within cmdTimeout.
func skein(t *testing.T, dir string, args ...string) result {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, skeinBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		t.Fatalf("skein %s: did not finish within %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), cmdTimeout, r.stdout, r.stderr)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("skein %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("skein %s: exit %d in %v", strings.Join(args, " "), r.code, r.elapsed.Round(time.Millisecond))
	return r
}

// runJSON mirrors runView/outcomeView as they appear on the wire.
type runJSON struct {
	Run      string          `json:"run"`
	Workflow string          `json:"workflow"`
	Status   string          `json:"status"`
	Result   json.RawMessage `json:"result"`
	Error    *string         `json:"error"`
	Outcomes []outcomeJSON   `json:"outcomes"`
	Waiting  json.RawMessage `json:"waiting"` // what a run that has not ended waits on
	// The chain of a run that continued as new (omitted otherwise).
	ContinuedFrom string        `json:"continued_from"`
	ContinuedAs   string        `json:"continued_as"`
	Abandoned     bool          `json:"abandoned"`
	Paused        *client.Pause `json:"paused"` // omitted unless paused
	// The links of a reset (omitted otherwise).
	ResetTo   string `json:"reset_to"`
	ResetFrom string `json:"reset_from"`
	ResetKey  string `json:"reset_key"`
}

type outcomeJSON struct {
	Key      string          `json:"key"`
	Function string          `json:"function"`
	Status   string          `json:"status"`
	Value    json.RawMessage `json:"value"`
	Error    *string         `json:"error"`
	Attempts int             `json:"attempts"`
}

func decodeRun(t *testing.T, r result) runJSON {
	t.Helper()
	var v runJSON
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not a run in JSON: %v\n%s", err, r)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value\n%s", r)
	}
	return v
}

func (v runJSON) keys() []string {
	var ks []string
	for _, o := range v.Outcomes {
		ks = append(ks, o.Key)
	}
	return ks
}

func (v runJSON) errorText() string {
	if v.Error == nil {
		return ""
	}
	return *v.Error
}

// jsonEq reports whether two JSON texts hold the same value.
func jsonEq(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

var (
	raceResult = `["s2:slow-result","f2:fast-result"]`
	raceKeys   = []string{"1", "t2.1", "t2.2", "t3.1", "t3.2"}
	// raceValues are the values stored under each key of a race run.
	raceValues = map[string]string{
		"1":    `null`,
		"t2.1": `"slow-result"`,
		"t2.2": `"s2:slow-result"`,
		"t3.1": `"fast-result"`,
		"t3.2": `"f2:fast-result"`,
	}
)

// checkRace checks a completed race run.
func checkRace(t *testing.T, r result, id string) runJSON {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("want exit 0\n%s", r)
	}
	v := decodeRun(t, r)
	if v.Run != id || v.Workflow != "race" || v.Status != "completed" || v.Error != nil {
		t.Errorf("run = %q, workflow = %q, status = %q, error = %v; want %q, race, completed, null\n%s", v.Run, v.Workflow, v.Status, v.Error, id, r)
	}
	if !jsonEq(t, v.Result, raceResult) {
		t.Errorf("result = %s; want %s", v.Result, raceResult)
	}
	keys := v.keys()
	slices.Sort(keys)
	if !slices.Equal(keys, raceKeys) {
		t.Errorf("outcome keys (sorted) = %q; want %q", keys, raceKeys)
	}
	for _, o := range v.Outcomes {
		if o.Status != "ok" || o.Error != nil {
			t.Errorf("outcome %s: status %q, error %v; want ok, null", o.Key, o.Status, o.Error)
		}
		if want, ok := raceValues[o.Key]; ok && !jsonEq(t, o.Value, want) {
			t.Errorf("outcome %s: value %s; want %s", o.Key, o.Value, want)
		}
	}
	return v
}

// dbRow is one outcome row as stored.
type dbRow struct {
	Key, Function, Status string
	Value                 string // raw bytes of the value column
	Seq                   int64
	Attempts              int64
	UpdatedAt             int64
}

// openRO opens path read-only. It fails if the file does not exist.
func openRO(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// settledRows returns the settled outcome rows of run in seq order.
func settledRows(ctx context.Context, db *sql.DB, run string) ([]dbRow, error) {
	rows, err := db.QueryContext(ctx, `SELECT key, function, status, value, seq, attempts, updated_at FROM outcomes WHERE run_id = ? AND status != 'pending' ORDER BY seq`, run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []dbRow
	for rows.Next() {
		var r dbRow
		var val []byte
		if err := rows.Scan(&r.Key, &r.Function, &r.Status, &val, &r.Seq, &r.Attempts, &r.UpdatedAt); err != nil {
			return nil, err
		}
		r.Value = string(val)
		out = append(out, r)
	}
	return out, rows.Err()
}

// readRows opens path read-only and returns the settled rows of run and
// the run's updated_at.
func readRows(t *testing.T, path, run string) ([]dbRow, int64) {
	t.Helper()
	db, err := openRO(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	rows, err := settledRows(context.Background(), db, run)
	if err != nil {
		t.Fatalf("read outcomes of %s: %v", run, err)
	}
	var updated int64
	if err := db.QueryRow(`SELECT updated_at FROM runs WHERE id = ?`, run).Scan(&updated); err != nil {
		t.Fatalf("read run %s: %v", run, err)
	}
	return rows, updated
}

func TestRunRace(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./examples/race")
	for _, evict := range []string{"never", "always"} {
		t.Run("evict="+evict, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "race.db")
			id := "race-" + evict
			args := []string{"run", wasm, "--db", db, "--id", id, "--evict", evict, "--json"}

			first := skein(t, dir, args...)
			v1 := checkRace(t, first, id)
			rows1, updated1 := readRows(t, db, id)
			if len(rows1) != len(raceKeys) {
				t.Errorf("stored settled rows: %d; want %d: %+v", len(rows1), len(raceKeys), rows1)
			}
			// The JSON lists outcomes in settle order, as stored.
			for i, row := range rows1 {
				if i < len(v1.Outcomes) && v1.Outcomes[i].Key != row.Key {
					t.Errorf("outcome %d in JSON is %s; the database has %s at that place in seq order", i, v1.Outcomes[i].Key, row.Key)
				}
			}

			// The same id again prints the stored run and executes nothing.
			second := skein(t, dir, args...)
			v2 := checkRace(t, second, id)
			if second.stdout != first.stdout {
				t.Errorf("second run printed a different run\nfirst:\n%s\nsecond:\n%s", first.stdout, second.stdout)
			}
			if !reflect.DeepEqual(v1.Outcomes, v2.Outcomes) {
				t.Errorf("outcomes differ on the second run\nfirst:  %+v\nsecond: %+v", v1.Outcomes, v2.Outcomes)
			}
			rows2, updated2 := readRows(t, db, id)
			if !reflect.DeepEqual(rows1, rows2) {
				t.Errorf("stored outcome rows changed on the second run (re-executed?)\nbefore: %+v\nafter:  %+v", rows1, rows2)
			}
			if updated1 != updated2 {
				t.Errorf("run row rewritten by the second run: updated_at %d -> %d", updated1, updated2)
			}

			if evict == "never" {
				// The text form says so too.
				third := skein(t, dir, args[:len(args)-1]...) // without --json
				if third.code != 0 || !strings.Contains(third.stdout, "nothing executed") || !strings.Contains(third.stdout, "run "+id+" (race): completed") {
					t.Errorf("a third run (text) should report the stored run and that nothing executed\n%s", third)
				}
				if rows3, updated3 := readRows(t, db, id); !reflect.DeepEqual(rows1, rows3) || updated3 != updated1 {
					t.Errorf("stored rows changed on the third run\nbefore: %+v\nafter:  %+v", rows1, rows3)
				}
			}

			insp := skein(t, dir, "inspect", id, "--db", db, "--json")
			checkRace(t, insp, id)
			if insp.stdout != first.stdout {
				t.Errorf("inspect printed a different run\nrun:\n%s\ninspect:\n%s", first.stdout, insp.stdout)
			}

			// The text form names the run, its status and every key.
			text := skein(t, dir, "inspect", id, "--db", db)
			if text.code != 0 {
				t.Fatalf("inspect (text): want exit 0\n%s", text)
			}
			for _, want := range append([]string{"run " + id + " (race): completed", "result: " + raceResult}, raceKeys...) {
				if !strings.Contains(text.stdout, want) {
					t.Errorf("inspect (text) output lacks %q\n%s", want, text)
				}
			}
		})
	}
}

func TestRunSequence(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./examples/sequence")
	dir := t.TempDir()
	r := skein(t, dir, "run", wasm, "--db", filepath.Join(dir, "seq.db"), "--input", `{"n":25}`, "--json")
	if r.code != 0 {
		t.Fatalf("want exit 0\n%s", r)
	}
	v := decodeRun(t, r)
	if v.Status != "completed" || !jsonEq(t, v.Result, "325") {
		t.Errorf("status %q, result %s; want completed, 325\n%s", v.Status, v.Result, r)
	}
	if v.Run == "" {
		t.Errorf("no generated run id")
	}
	var want []string
	for i := 1; i <= 25; i++ {
		want = append(want, strconv.Itoa(i))
	}
	if got := v.keys(); !slices.Equal(got, want) {
		t.Errorf("keys in settle order = %q; want %q", got, want)
	}
	for i, o := range v.Outcomes {
		if o.Function != "add" || o.Status != "ok" || !jsonEq(t, o.Value, strconv.Itoa(i+1)) {
			t.Errorf("outcome %s = %+v; want add ok %d", o.Key, o, i+1)
		}
	}
}

// killPoint says when TestCrashRecovery kills the run: once rows settled
// outcome rows are stored, or, when rows is 0, delay after the run's row
// first appears in the database. (The process spends about a second
// compiling the module before it starts the run, so delays are measured
// from the run's start, not the process's.)
type killPoint struct {
	name  string
	rows  int
	delay time.Duration
}

func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "kills skein run at many points of the race (about 70 s)")
	wasm := wasmbuild.Build(t, "./examples/race")
	rng := rand.New(rand.NewPCG(1, 7))
	delay := time.Duration(rng.IntN(301)) * time.Millisecond
	points := []killPoint{
		{name: "at-run-start"}, // before any outcome is stored
		{name: "after-row-1", rows: 1},
		{name: "after-row-2", rows: 2},
		{name: "after-row-3", rows: 3},
		{name: "after-row-4", rows: 4},
		{name: "random-" + delay.String(), delay: delay},
	}
	for _, kp := range points {
		t.Run(kp.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "crash.db")
			id := "crash"
			args := []string{"run", wasm, "--db", db, "--id", id, "--json"}

			finished, atKill := killRun(t, dir, db, id, kp, args)
			var snap []dbRow
			if _, err := os.Stat(db); err == nil {
				snap, _ = readRows(t, db, id)
			}
			if finished {
				t.Logf("the run finished before the kill point (%d settled rows stored)", len(snap))
			} else {
				t.Logf("killed with %d settled rows seen; %d stored after death: %s", atKill, len(snap), rowKeys(snap))
			}
			if kp.rows > 0 && !finished && len(snap) < kp.rows {
				t.Errorf("kill point after %d rows, but only %d are stored after death", kp.rows, len(snap))
			}

			r := skein(t, dir, args...)
			v := checkRace(t, r, id)
			final, _ := readRows(t, db, id)
			byKey := map[string]dbRow{}
			for _, row := range final {
				byKey[row.Key] = row
			}
			for _, want := range snap {
				got, ok := byKey[want.Key]
				switch {
				case !ok:
					t.Errorf("row %s stored before the crash is gone after recovery", want.Key)
				case got.Function != want.Function || got.Value != want.Value || got.Seq != want.Seq || got.Status != want.Status:
					t.Errorf("row %s changed by recovery:\nbefore: %+v\nafter:  %+v", want.Key, want, got)
				}
			}
			// The JSON shows the stored values in seq order.
			if got := v.keys(); !slices.Equal(got, rowKeys(final)) {
				t.Errorf("JSON outcome order %q; stored seq order %q", got, rowKeys(final))
			}
			seqs := map[int64]string{}
			for _, row := range final {
				if k, dup := seqs[row.Seq]; dup {
					t.Errorf("rows %s and %s share seq %d", k, row.Key, row.Seq)
				}
				seqs[row.Seq] = row.Key
			}
		})
	}
}

func rowKeys(rows []dbRow) []string {
	var ks []string
	for _, r := range rows {
		ks = append(ks, r.Key)
	}
	return ks
}

// killRun starts `skein args...` and SIGKILLs it at kp, polling the
// database read-only. It returns whether the process exited on its own
// before the kill point, and how many settled rows the poll saw when it
// killed.
func killRun(t *testing.T, dir, db, id string, kp killPoint, args []string) (finished bool, seen int) {
	t.Helper()
	cmd := exec.Command(skeinBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	kill := func() {
		if err := cmd.Process.Kill(); err != nil {
			t.Logf("kill: %v", err)
		}
		if err := <-exited; err == nil {
			// Exited cleanly between the last poll and the kill.
			finished = true
		}
	}

	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	var conn *sql.DB
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	var runSeen time.Time
	var lastErr error
	for {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("skein exited with %v before the kill point\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			return true, seen
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("kill point %s not reached within 10s (last poll error: %v; settled rows seen: %d)", kp.name, lastErr, seen)
		}
		if conn == nil {
			if c, err := openRO(db); err == nil {
				conn = c
			} else {
				lastErr = err
			}
		}
		if conn != nil {
			if kp.rows == 0 {
				if runSeen.IsZero() {
					var n int
					if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, id).Scan(&n); err != nil {
						lastErr = err
					} else if n > 0 {
						runSeen = time.Now()
					}
				}
				if !runSeen.IsZero() && time.Since(runSeen) >= kp.delay {
					if rows, err := settledRows(ctx, conn, id); err == nil {
						seen = len(rows)
					}
					kill()
					return finished, seen
				}
			} else {
				rows, err := settledRows(ctx, conn, id)
				if err != nil {
					lastErr = err
				} else if seen = len(rows); seen >= kp.rows {
					kill()
					return finished, seen
				}
			}
		}
		time.Sleep(1500 * time.Microsecond)
	}
}

// noHostPanic fails if the output of r shows a Go panic trace that is not
// part of the run's own error text (a workflow's panic is reported in it).
func noHostPanic(t *testing.T, r result) {
	t.Helper()
	if r.code == 2 && strings.Contains(r.stderr, "panic: ") {
		t.Errorf("skein panicked\n%s", r)
	}
	out := r.stdout
	if v := (runJSON{}); strings.HasPrefix(strings.TrimSpace(out), "{") && json.Unmarshal([]byte(out), &v) == nil {
		v.Error = nil
		b, _ := json.Marshal(v)
		out = string(b)
	}
	for name, s := range map[string]string{"stdout": out, "stderr": r.stderr} {
		if strings.Contains(s, "goroutine ") {
			t.Errorf("%s shows a Go panic trace from the host\n%s", name, r)
		}
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	probe := wasmbuild.Build(t, "./testdata/workflows/probe")
	sequence := wasmbuild.Build(t, "./examples/sequence")
	files := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	text := write("text.wasm", "this is a text file, not a module\n")
	empty := write("empty.wasm", "")
	emptyMod := write("emptymod.wasm", "\x00asm\x01\x00\x00\x00")
	missing := filepath.Join(files, "does-not-exist.wasm")

	// A database holding one finished run, for inspect.
	existing := filepath.Join(t.TempDir(), "existing.db")
	if r := skein(t, "", "run", sequence, "--db", existing, "--input", `{"n":1}`, "--id", "one"); r.code != 0 {
		t.Fatalf("set-up run failed\n%s", r)
	}

	type tc struct {
		name string
		args []string // "DB" is replaced by a fresh database path
		code int      // exact exit code; -1: any non-zero
		want []string // each must appear in stdout+stderr
		// when set, stdout is a run in JSON with this status, and its
		// error contains each of errWant.
		status  string
		errWant []string
		// noDB: the command fails before any run exists, and leaves no
		// database file behind (the next inspect says "no database").
		noDB bool
	}
	cases := []tc{
		{name: "not-wasm", noDB: true, args: []string{"run", text, "--db", "DB"}, code: -1,
			want: []string{"not a WebAssembly module"}},
		{name: "empty-file", noDB: true, args: []string{"run", empty, "--db", "DB"}, code: -1,
			want: []string{"empty"}},
		{name: "empty-module", noDB: true, args: []string{"run", emptyMod, "--db", "DB"}, code: -1,
			want: []string{"not a skein module"}},
		{name: "unknown-workflow", noDB: true, args: []string{"run", probe, "--db", "DB", "--workflow", "nope"}, code: -1,
			want: []string{`"nope"`, "interleave", "sandbox", "panics", "rawgo"}},
		{name: "workflow-not-chosen", noDB: true, args: []string{"run", probe, "--db", "DB"}, code: exitUsage,
			want: []string{"--workflow", "interleave", "sandbox"}},
		// An integer that does not fit an int is refused as the guest's
		// decode would refuse it, before a run exists.
		{name: "input-out-of-range", noDB: true, args: []string{"run", sequence, "--db", "DB", "--input", `{"n":99999999999999999999}`}, code: -1,
			want: []string{`at $.n: want integer in int64 range [-9223372036854775808, 9223372036854775807], got integer 99999999999999999999`}},
		{name: "input-wrong-shape", noDB: true, args: []string{"run", sequence, "--db", "DB", "--input", `{"n":"x"}`}, code: -1,
			want: []string{`the input of workflow "sequence" does not have the expected shape: at $.n: want integer or null, got string "x"`,
				`expected shape (JSON Schema): {"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"n":{"format":"int64",`}},
		{name: "input-not-json", noDB: true, args: []string{"run", sequence, "--db", "DB", "--input", "{"}, code: -1,
			want: []string{"not valid JSON"}},
		{name: "workflow-panics", args: []string{"run", probe, "--db", "DB", "--workflow", "panics", "--json"}, code: exitFailed,
			status: "failed", errWant: []string{"assignment to entry in nil map"}},
		{name: "workflow-exits", args: []string{"run", probe, "--db", "DB", "--workflow", "exits", "--json"}, code: exitFailed,
			status: "failed", errWant: []string{"exited with code 7"}},
		{name: "raw-goroutine", args: []string{"run", probe, "--db", "DB", "--workflow", "rawgo", "--json"}, code: exitFailed,
			status: "failed", errWant: []string{"skein.Go"}},
		{name: "missing-module", noDB: true, args: []string{"run", missing, "--db", "DB"}, code: -1,
			want: []string{missing}},
		{name: "unknown-command", args: []string{"frobnicate"}, code: exitUsage,
			want: []string{`unknown command "frobnicate"`, "run", "inspect"}},
		{name: "run-without-args", args: []string{"run"}, code: exitUsage,
			want: []string{"usage: skein run MODULE.wasm", "want exactly one MODULE.wasm"}},
		{name: "no-args", args: nil, code: exitUsage,
			want: []string{"Commands:", "run", "inspect"}},
		{name: "bad-evict", noDB: true, args: []string{"run", sequence, "--db", "DB", "--evict", "sometimes"}, code: exitUsage,
			want: []string{"sometimes", "never", "always"}},
		{name: "inspect-no-run", args: []string{"inspect", "nope", "--db", existing}, code: -1,
			want: []string{"no run", "nope"}},
		{name: "inspect-no-db", args: []string{"inspect", "one", "--db", filepath.Join(files, "none.db")}, code: -1,
			want: []string{"none.db"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := slices.Clone(c.args)
			for i, a := range args {
				if a == "DB" {
					args[i] = filepath.Join(dir, "bad.db")
				}
			}
			r := skein(t, dir, args...)
			switch {
			case c.code == -1 && r.code == 0:
				t.Errorf("want a non-zero exit code\n%s", r)
			case c.code != -1 && r.code != c.code:
				t.Errorf("exit code %d; want %d\n%s", r.code, c.code, r)
			}
			both := r.stdout + r.stderr
			for _, w := range c.want {
				if !strings.Contains(both, w) {
					t.Errorf("output lacks %q\n%s", w, r)
				}
			}
			if c.status != "" {
				v := decodeRun(t, r)
				if v.Status != c.status {
					t.Errorf("status %q; want %q\n%s", v.Status, c.status, r)
				}
				for _, w := range c.errWant {
					if !strings.Contains(v.errorText(), w) {
						t.Errorf("run error lacks %q: %q", w, v.errorText())
					}
				}
				if !strings.Contains(r.stderr, "run "+v.Run+" failed") {
					t.Errorf("stderr does not report the failed run\n%s", r)
				}
			}
			if c.noDB {
				checkNoDatabase(t, dir, filepath.Join(dir, "bad.db"))
			}
			noHostPanic(t, r)
		})
	}
}

// checkNoDatabase checks that the SQLite file db and its journal files do
// not exist, and that skein inspect says so.
func checkNoDatabase(t *testing.T, dir, db string) {
	t.Helper()
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a failed command left %s behind", p)
		}
	}
	r := skein(t, dir, "inspect", "any", "--db", db)
	if !strings.Contains(r.stderr, "no database "+db) {
		t.Errorf("skein inspect after a failed run does not say there is no database:\n%s", r)
	}
}
