package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestCrashTorture starts a server (cmd/skein/internal/torturehost:
// `skein serve` plus a host activity that appends to a log file outside
// the process), starts 50 runs of a chain of such activity calls, then
// SIGKILLs the server at 10 seeded random moments, restarting it each
// time, and checks: every run completes with the right result; no
// recorded outcome ever changes value; an activity whose outcome was
// recorded before a kill never executes again after it; and an activity
// executes at most once per process (so at most one extra execution per
// kill it was in flight at). SKEIN_TORTURE_SEED picks another schedule.
func TestCrashTorture(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "kills a server 10 times under 50 runs (about 15 s)")
	if testing.Short() {
		t.Skip("crash torture: skipped with -short")
	}
	const runs, steps, kills = 50, 40, 10
	seed := uint64(20251129)
	if s := os.Getenv("SKEIN_TORTURE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (set SKEIN_TORTURE_SEED to change it)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	dir := t.TempDir()
	bin := filepath.Join(dir, "torturehost")
	build := exec.Command("go", "build", "-o", bin, "./cmd/skein/internal/torturehost")
	build.Dir = wasmbuild.Root()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build torturehost: %v\n%s", err, out)
	}
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/torture"))
	if err != nil {
		t.Fatal(err)
	}
	db, effects := filepath.Join(dir, "skein.db"), filepath.Join(dir, "effects.log")

	gen := 0
	p := startTorture(t, bin, db, effects, gen)
	if r := p.call(t, "POST", "/v1/modules?name=torture", wasm); r.status != 201 {
		t.Fatalf("deploy: %s", r)
	}
	want := map[string]string{} // run -> result
	for i := range runs {
		id := fmt.Sprintf("r%02d", i)
		body := fmt.Sprintf(`{"module":"torture","workflow":"chain","input":{"id":%q,"n":%d},"id":%q}`, id, steps, id)
		if r := p.call(t, "POST", "/v1/runs", []byte(body)); r.status != 201 {
			t.Fatalf("start %s: %s", id, r)
		}
		sum := 0
		for s := range steps {
			sum += 3 * (s*s + len(id))
		}
		want[id] = strconv.Itoa(sum)
	}

	recordedBy := map[string]int{} // run/key -> generation by whose kill it was recorded
	var last map[string]string
	snapshot := func(when string) {
		t.Helper()
		snap := readOutcomes(t, db)
		for k, v := range last {
			if snap[k] != v {
				t.Errorf("%s: outcome %s changed from %s to %q", when, k, v, snap[k])
			}
		}
		for k := range snap {
			if _, ok := recordedBy[k]; !ok {
				recordedBy[k] = gen
			}
		}
		last = snap
	}
	for k := range kills {
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		p.kill()
		snapshot(fmt.Sprintf("after kill %d", k+1))
		b, _ := os.ReadFile(effects)
		t.Logf("kill %d: %d outcomes recorded, %d activity executions so far", k+1, len(last), bytes.Count(b, []byte("\n")))
		gen++
		p = startTorture(t, bin, db, effects, gen)
	}

	deadline := time.Now().Add(40 * time.Second)
	for {
		var l struct {
			Runs []struct{ ID, Status, Error string }
		}
		r := p.call(t, "GET", "/v1/runs?limit=1000", nil)
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatalf("list runs: %s", r)
		}
		done := 0
		for _, run := range l.Runs {
			switch run.Status {
			case "completed":
				done++
			case "failed", "diverged", "canceled":
				t.Fatalf("run %s %s: %s", run.ID, run.Status, run.Error)
			}
		}
		if done == runs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs completed after the last restart\n%s", done, runs, p.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for id, res := range want {
		var run struct{ Result json.RawMessage }
		r := p.call(t, "GET", "/v1/runs/"+id, nil)
		if err := json.Unmarshal(r.body, &run); err != nil || string(run.Result) != res {
			t.Errorf("run %s: %s; want result %s", id, r, res)
		}
	}
	p.kill()
	gen++
	snapshot("at the end")

	// The effects log: which process generation executed each activity.
	f, err := os.Open(effects)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	execs := map[string][]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var id string
		var i, g int
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %d", &id, &i, &g); err != nil {
			t.Fatalf("effects log line %q: %v", sc.Text(), err)
		}
		key := fmt.Sprintf("%s/append-%d", id, i)
		execs[key] = append(execs[key], g)
	}
	extra := 0
	for r := range runs {
		id := fmt.Sprintf("r%02d", r)
		for i := range steps {
			key := fmt.Sprintf("%s/append-%d", id, i)
			gens := execs[key]
			if len(gens) == 0 {
				t.Errorf("%s never executed", key)
				continue
			}
			extra += len(gens) - 1
			for j := 1; j < len(gens); j++ {
				if gens[j] <= gens[j-1] {
					t.Errorf("%s executed twice in one process: generations %v", key, gens)
				}
			}
			if g, ok := recordedBy[key]; ok && gens[len(gens)-1] > g {
				t.Errorf("%s was recorded before kill %d but executed again in generation %d (all: %v)", key, g+1, gens[len(gens)-1], gens)
			}
			if v, wantV := last[key], fmt.Sprintf("ok:%d", i*i+len(id)); v != wantV {
				t.Errorf("%s recorded %q; want %q", key, v, wantV)
			}
		}
	}
	t.Logf("%d activity executions in all, %d of them again after a kill", runs*steps+extra, extra)
}

// readOutcomes reads every settled outcome of the database as run/key ->
// status:value.
func readOutcomes(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := openRO(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), `SELECT run_id, key, status, value FROM outcomes WHERE status != 'pending'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var run, key, status string
		var val []byte
		if err := rows.Scan(&run, &key, &status, &val); err != nil {
			t.Fatal(err)
		}
		out[run+"/"+key] = status + ":" + string(val)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tortureHost is a running torture host process.
type tortureHost struct{ *skeinServer }

func startTorture(t *testing.T, bin, db, effects string, gen int) *tortureHost {
	t.Helper()
	args := []string{"--db", db, "--log", effects, "--gen", strconv.Itoa(gen)}
	if c := testcache.Shared(); c != "" {
		args = append(args, "--cache-dir", c)
	}
	return &tortureHost{startListener(t, exec.Command(bin, args...), "listening on ", "torturehost")}
}

func (p *tortureHost) call(t *testing.T, method, path string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(method, p.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == "POST" {
		ct := "application/json"
		if strings.HasPrefix(path, "/v1/modules") {
			ct = "application/wasm"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, p.stderr.String())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: b}
}
