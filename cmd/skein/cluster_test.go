package main

// End-to-end tests of several `skein serve` workers sharing one Postgres
// schema: runs started through any worker's API are driven by whichever
// worker claims them, each run by one worker at a time (leases), each to
// its end exactly once; a worker killed mid-run loses its runs to the
// others once its leases expire, and its stale leases can write nothing.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/postgres"
)

// clusterLeaseTTL is the --lease-ttl of the workers of these tests.
const clusterLeaseTTL = 2 * time.Second

// clusterWorker is one `skein serve` of a cluster, with its --worker-id.
type clusterWorker struct {
	name string
	*skeinServer
}

// startClusterWorker starts `skein serve --store dsn --worker-id name
// --poll 50ms --lease-ttl 2s args...`.
func startClusterWorker(t *testing.T, dsn, name string, args ...string) *clusterWorker {
	t.Helper()
	flags := append([]string{"--worker-id", name, "--poll", "50ms", "--lease-ttl", clusterLeaseTTL.String()}, args...)
	return &clusterWorker{name: name, skeinServer: startServe(t, []string{"--store", dsn}, nil, flags...)}
}

// clusterTails returns the last lines of every worker's stderr, for
// failure messages.
func clusterTails(ws ...*clusterWorker) string {
	var b strings.Builder
	for _, w := range ws {
		lines := strings.Split(strings.TrimRight(w.stderr.String(), "\n"), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Fprintf(&b, "\n--- %s stderr (tail):\n%s", w.name, strings.Join(lines, "\n"))
	}
	return b.String()
}

// openClusterStore opens the workers' Postgres schema directly, closed at
// the end of the test.
func openClusterStore(t *testing.T, dsn string) *postgres.DB {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatalf("open the Postgres store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// clusterRuns returns every run of the store, by id.
func clusterRuns(t *testing.T, st store.Store) map[string]store.Run {
	t.Helper()
	out := map[string]store.Run{}
	after := ""
	for {
		page, err := st.Runs(context.Background(), store.RunFilter{Limit: 1000, After: after})
		if err != nil {
			t.Fatalf("list runs: %v", err)
		}
		for _, r := range page {
			out[r.ID] = r
		}
		if len(page) < 1000 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

// clusterMetrics reads GET /metrics of a worker: the value of every
// series, by its name with labels (`skein_runs_ended_total{namespace="default",status="completed"}`).
func clusterMetrics(t *testing.T, w *clusterWorker) map[string]float64 {
	t.Helper()
	resp, err := httpClient.Get(w.url + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics of %s: %v", w.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics of %s: HTTP %d, %v\n%s", w.name, resp.StatusCode, err, body)
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("metrics of %s: bad line %q", w.name, line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics of %s: bad line %q: %v", w.name, line, err)
		}
		m[line[:i]] = v
	}
	for _, k := range []string{endedCompleted, `skein_leases_claimed_total{namespace="default"}`, `skein_leases_lost_total{namespace="default"}`} {
		if _, ok := m[k]; !ok {
			t.Fatalf("metrics of %s lack %s:\n%s", w.name, k, body)
		}
	}
	return m
}

// endedCompleted is the series of the runs a worker drove to completion.
const endedCompleted = `skein_runs_ended_total{namespace="default",status="completed"}`

// checkLeaseHistory checks the lease history of one run: tokens 1, 2, ...
// in order, every owner one of owners, and no two leases overlapping
// (each claim at or after the end of the lease before it). It returns
// the history.
func checkLeaseHistory(t *testing.T, st store.Store, runID string, owners []string) []store.LeaseRecord {
	t.Helper()
	h, err := st.LeaseHistory(context.Background(), runID)
	if err != nil {
		t.Fatalf("lease history of %s: %v", runID, err)
	}
	if len(h) == 0 {
		t.Errorf("run %s: no lease in its history; every run is driven under one", runID)
	}
	for i, l := range h {
		if l.RunID != runID || l.Token != int64(i+1) {
			t.Errorf("run %s: lease #%d is %+v; want run %s, token %d", runID, i, l, runID, i+1)
		}
		if !slices.Contains(owners, l.Owner) {
			t.Errorf("run %s: lease %d owned by %q; want one of %q", runID, l.Token, l.Owner, owners)
		}
		if l.Expiry <= l.ClaimedAt {
			t.Errorf("run %s: lease %d expires at %d, not after its claim at %d", runID, l.Token, l.Expiry, l.ClaimedAt)
		}
		if i > 0 {
			if p := h[i-1]; l.ClaimedAt < p.End() {
				t.Errorf("run %s: lease %d (%s) claimed %v before lease %d (%s) ended, by the lease history (the leases overlap):\n  %+v\n  %+v",
					runID, l.Token, l.Owner, time.Duration(p.End()-l.ClaimedAt), p.Token, p.Owner, p, l)
			}
		}
	}
	return h
}

// clusterCase is one run of TestClusterPostgres and what it must end with.
type clusterCase struct {
	id, module, workflow, input string
	want                        string // the result, JSON
	worker                      int    // index of the worker whose API starts it
	// resolver and decision: an approval's promise is settled with
	// decision through this worker's API (-1: not an approval).
	resolver int
	decision string
	resolved bool
}

// TestClusterPostgres runs three workers (`skein serve --store
// postgres://...`, ids w1..w3, 2 s leases) on one schema, starts 200 runs
// of the examples round-robin through their three APIs (race, sequence,
// both provision workflows, approval settled through another worker's
// API than the one that started it, saga with a good card, fanout with 2
// to 4 child runs), and checks: every run and every child run completed
// with exactly its result; each run was driven to its end exactly once
// (the workers' skein_runs_ended_total{status="completed"} sum to the
// completed runs of the store, and each worker's count is the number of
// runs whose last lease it held); no run was held by two workers at once
// (lease history: each claim at or after the end of the one before) and
// every lease was released; all three workers did some of the work; and
// no worker lost a lease.
func TestClusterPostgres(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	st := openClusterStore(t, dsn)
	ctx := context.Background()
	owners := []string{"w1", "w2", "w3"}
	var ws []*clusterWorker
	for _, name := range owners {
		ws = append(ws, startClusterWorker(t, dsn, name))
	}
	begin := time.Now()

	// Deploy the examples through one worker's API.
	modules := []string{"race", "sequence", "provision", "approval", "saga", "fanout"}
	for _, m := range modules {
		wasm, err := os.ReadFile(wasmbuild.Build(t, "./examples/"+m))
		if err != nil {
			t.Fatal(err)
		}
		if r := ws[0].call(t, "POST", "/v1/modules?name="+m, "", wasm); r.status != http.StatusCreated {
			t.Fatalf("deploy %s: %s", m, r)
		}
	}

	const runs = 200
	cases := make([]*clusterCase, 0, runs)
	children := map[string]string{} // child run id -> result
	for i := range runs {
		c := &clusterCase{module: modules[i%len(modules)], worker: i % len(ws), resolver: -1}
		c.id = fmt.Sprintf("c%03d-%s", i, c.module)
		c.workflow = c.module
		switch c.module {
		case "race":
			c.input, c.want = "null", raceResult
		case "sequence":
			c.input, c.want = `{"n":10}`, "55"
		case "provision":
			c.workflow = "provision_vm"
			if i%2 == 1 {
				c.workflow = "provision_vm_named"
			}
			size := []string{"small", "large"}[i/len(modules)%2]
			c.input = fmt.Sprintf(`{"name":"vm%d","size":%q}`, i, size)
			c.want = fmt.Sprintf(`"10.0.0.7/vm-vm%d-%s"`, i, size)
		case "approval":
			c.input = fmt.Sprintf(`{"request":"req%d"}`, i)
			c.resolver = (c.worker + 1) % len(ws)
			approved, verdict := i%4 == 3, "rejected"
			if approved {
				verdict = "approved"
			}
			c.decision = fmt.Sprintf(`{"value":{"approved":%t,"by":%q}}`, approved, ws[c.resolver].name)
			c.want = fmt.Sprintf(`"ticket:req%d %s by %s"`, i, verdict, ws[c.resolver].name)
		case "saga":
			c.input = fmt.Sprintf(`{"trip":"trip%d","card":"visa-%d"}`, i, i)
			c.want = fmt.Sprintf(`"flight for trip%d; hotel for trip%d; charged visa-%d"`, i, i, i)
		case "fanout":
			n := 2 + i/len(modules)%3
			c.input = fmt.Sprintf(`{"n":%d}`, n)
			c.want = strconv.Itoa(n * (n + 1) * (2*n + 1) / 6)
			for j := range n {
				children[fmt.Sprintf("%s.fan.%d.1", c.id, j)] = strconv.Itoa((j + 1) * (j + 1))
			}
		}
		cases = append(cases, c)
	}
	for _, c := range cases {
		body := fmt.Sprintf(`{"module":%q,"workflow":%q,"input":%s,"id":%q}`, c.module, c.workflow, c.input, c.id)
		if r := ws[c.worker].call(t, "POST", "/v1/runs", "", body); r.status != http.StatusCreated {
			t.Fatalf("start %s through %s: %s", c.id, ws[c.worker].name, r)
		}
	}
	t.Logf("%d runs started in %v", runs, time.Since(begin).Round(time.Millisecond))

	// Wait for every run and child to end, settling each approval's
	// promise through its resolver once the run waits for it.
	total := runs + len(children)
	deadline := time.Now().Add(60 * time.Second)
	var all map[string]store.Run
	for {
		all = clusterRuns(t, st)
		ended := 0
		for _, r := range all {
			if r.Status.Terminal() || r.Status == store.RunDiverged {
				ended++
			}
		}
		for _, c := range cases {
			if c.resolver < 0 || c.resolved || all[c.id].Status != store.RunSuspended {
				continue
			}
			switch r := ws[c.resolver].call(t, "POST", "/v1/promises/"+c.id+".decision", "", c.decision); r.status {
			case http.StatusOK:
				c.resolved = true
			case http.StatusNotFound: // not recorded yet: try again
			default:
				t.Fatalf("settle %s.decision through %s: %s%s", c.id, ws[c.resolver].name, r, clusterTails(ws...))
			}
		}
		if len(all) == total && ended == total {
			break
		}
		if time.Now().After(deadline) {
			var left []string
			for id, r := range all {
				if !r.Status.Terminal() {
					left = append(left, fmt.Sprintf("%s (%s, lease %q)", id, r.Status, r.LeaseOwner))
				}
			}
			slices.Sort(left)
			t.Fatalf("after %v: %d of %d runs stored, %d ended; not ended: %s%s",
				time.Since(begin).Round(time.Millisecond), len(all), total, ended, strings.Join(left, ", "), clusterTails(ws...))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d runs (%d children) ended %v after the workers started", total, len(children), time.Since(begin).Round(time.Millisecond))

	// Every run completed with exactly its result; no other run exists.
	want := map[string]string{}
	parents := map[string]string{}
	for _, c := range cases {
		want[c.id] = c.want
	}
	for id, res := range children {
		want[id] = res
		parents[id] = id[:strings.Index(id, ".")]
	}
	for id, r := range all {
		w, ok := want[id]
		switch {
		case !ok:
			t.Errorf("unexpected run %s (%s): %+v", id, r.Workflow, r)
		case r.Status != store.RunCompleted || !jsonEq(t, r.Result, w):
			t.Errorf("run %s (%s): %s, result %s, error %q; want completed with %s", id, r.Workflow, r.Status, r.Result, r.Error, w)
		case r.Parent != parents[id]:
			t.Errorf("run %s: parent %q; want %q", id, r.Parent, parents[id])
		}
	}

	// The leases are released once the drives return, and the end counts
	// are bumped just after the end is committed: wait for both.
	var ms []map[string]float64
	deadline = time.Now().Add(10 * time.Second)
	for {
		held := 0
		for _, r := range clusterRuns(t, st) {
			if r.LeaseOwner != "" {
				held++
			}
		}
		ms = ms[:0]
		sum := 0.0
		for _, w := range ws {
			m := clusterMetrics(t, w)
			ms = append(ms, m)
			sum += m[endedCompleted]
		}
		if held == 0 && sum >= float64(total) {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("after 10s: %d runs still leased, %v runs counted as completed by the workers; checking anyway", held, sum)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	// No run held by two workers at once; every lease released; the last
	// lease of each run is held by the worker that completed it.
	lastOwner := map[string]int{}
	leasesBy := map[string]int{}
	handoffs := 0
	minGap := time.Duration(1<<63 - 1)
	for id := range all {
		h := checkLeaseHistory(t, st, id, owners)
		for i := 1; i < len(h); i++ {
			minGap = min(minGap, time.Duration(h[i].ClaimedAt-h[i-1].End()))
		}
		for _, l := range h {
			leasesBy[l.Owner]++
			if l.ReleasedAt == 0 {
				t.Errorf("run %s: lease %d of %s was never released (no worker lost a lease or stopped)", id, l.Token, l.Owner)
			}
		}
		for i := 1; i < len(h); i++ {
			if h[i].Owner != h[i-1].Owner {
				handoffs++
			}
		}
		if len(h) > 0 {
			lastOwner[h[len(h)-1].Owner]++
		}
		if r, err := st.Run(ctx, id); err != nil || r.LeaseOwner != "" || r.LeaseExpiry != 0 {
			t.Errorf("run %s after its end: lease %q until %d (%v); want no owner", id, r.LeaseOwner, r.LeaseExpiry, err)
		}
	}
	t.Logf("leases by owner %v; %d handoffs between workers; shortest time from a lease's end to the next claim %v; runs ended by owner %v", leasesBy, handoffs, minGap, lastOwner)

	// Exactly once, and nothing stalled.
	sum := 0.0
	for i, w := range ws {
		m := ms[i]
		t.Logf("%s: completed %v, claimed %v leases, lost %v", w.name, m[endedCompleted], m[`skein_leases_claimed_total{namespace="default"}`], m[`skein_leases_lost_total{namespace="default"}`])
		sum += m[endedCompleted]
		if got, want := m[endedCompleted], float64(lastOwner[w.name]); got != want {
			t.Errorf("%s counts %v runs completed; it holds the last lease of %v runs", w.name, got, want)
		}
		for k, v := range m {
			if strings.HasPrefix(k, "skein_runs_ended_total{") && k != endedCompleted && v != 0 {
				t.Errorf("%s: %s %v; want 0", w.name, k, v)
			}
		}
		if v := m[`skein_leases_lost_total{namespace="default"}`]; v != 0 {
			t.Errorf("%s lost %v leases; want 0 (a worker stalled past its lease)", w.name, v)
		}
		if leasesBy[w.name] == 0 {
			t.Errorf("%s holds no lease in any run's history; the work was not split", w.name)
		}
	}
	if sum != float64(total) {
		t.Errorf("the workers drove %v runs to completion; the store has %d completed runs (a run driven to its end twice, or not counted)", sum, total)
	}
	if t.Failed() {
		t.Log(clusterTails(ws...))
	}
	for _, w := range ws {
		w.stop(t)
	}
}

// TestClusterFailover runs three workers (2 s leases) on one schema and
// SIGKILLs one of them, w1, while it drives chain runs mid-way (12 runs
// of 8 steps of 250 ms; w1 starts alone, so it holds some, and the others
// join after). It checks: every run completes with 36; each run w1 held
// at the kill was claimed next by another worker, no sooner than w1's
// lease expired (the takeover delay is logged), and no two leases of any
// run overlap; the survivors count as completed exactly the runs whose
// last lease they held, and lost no lease. Then, through the store, every
// lease w1 held at its death is stale: a fenced commit with it fails with
// store.ErrLeaseLost and writes nothing, renewing and releasing it fail
// with ErrLeaseLost, and the run stays completed with its result.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	st := openClusterStore(t, dsn)
	ctx := context.Background()
	owners := []string{"w1", "w2", "w3"}
	const runs, steps, result = 12, 8, "36"

	w1 := startClusterWorker(t, dsn, "w1", "--concurrency", "6")
	deployServerModule(t, w1.skeinServer, nil)
	begin := time.Now()
	var ids []string
	for i := range runs {
		id := fmt.Sprintf("chain-%02d", i)
		ids = append(ids, id)
		body := fmt.Sprintf(`{"module":"srv","workflow":"chain","input":{"n":%d,"ms":250},"id":%q}`, steps, id)
		if r := w1.call(t, "POST", "/v1/runs", "", body); r.status != http.StatusCreated {
			t.Fatalf("start %s: %s", id, r)
		}
	}
	ws := []*clusterWorker{w1}
	for _, name := range owners[1:] {
		ws = append(ws, startClusterWorker(t, dsn, name, "--concurrency", "6"))
	}
	survivors := ws[1:]

	// Wait until w1 drives runs mid-way: running under its lease, with at
	// least one step recorded and at least two to go (so they are still
	// running at the kill); and none of its runs before its first step,
	// so that all it holds are mid-way (w1 started them all at once).
	okSteps := func(id string) int {
		outs, err := st.Outcomes(ctx, id)
		if err != nil {
			t.Fatalf("outcomes of %s: %v", id, err)
		}
		n := 0
		for _, o := range outs {
			if o.Status == store.OutcomeOK {
				n++
			}
		}
		return n
	}
	var victim map[string]store.Lease
	deadline := time.Now().Add(20 * time.Second)
	for {
		victim = map[string]store.Lease{}
		early := 0
		for _, id := range ids {
			r, err := st.Run(ctx, id)
			if err != nil {
				t.Fatalf("run %s: %v", id, err)
			}
			if r.LeaseOwner != "w1" || r.Status.Terminal() {
				continue
			}
			switch n := okSteps(id); {
			case n == 0:
				early++
			case r.Status == store.RunRunning && n <= steps-2:
				victim[id] = store.Lease{RunID: id, Owner: r.LeaseOwner, Token: r.LeaseToken, Expiry: r.LeaseExpiry}
			}
		}
		if len(victim) > 0 && early == 0 {
			break
		}
		if time.Now().After(deadline) {
			if len(victim) > 0 {
				break
			}
			t.Fatalf("w1 drives no run mid-way after 20s%s", clusterTails(ws...))
		}
		time.Sleep(20 * time.Millisecond)
	}
	killedAt := time.Now()
	w1.kill()
	t.Logf("killed w1 %v after the runs started, holding %d runs mid-way", killedAt.Sub(begin).Round(time.Millisecond), len(victim))
	// Until its lease expires, a run of the dead worker still names it.
	for id := range victim {
		wantExit(t, ws[1].cli(t, nil, "status", id), 0, "run "+id+" (chain): running", "worker: w1 (lease until ")
		break
	}

	// Every run completes.
	deadline = time.Now().Add(30 * time.Second)
	for {
		all := clusterRuns(t, st)
		done := 0
		for _, id := range ids {
			if all[id].Status.Terminal() || all[id].Status == store.RunDiverged {
				done++
			}
		}
		if done == runs {
			for _, id := range ids {
				if r := all[id]; r.Status != store.RunCompleted || !jsonEq(t, r.Result, result) {
					t.Errorf("run %s: %s, result %s, error %q; want completed with %s", id, r.Status, r.Result, r.Error, result)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs ended 30s after the kill%s", done, runs, clusterTails(survivors...))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("all %d runs ended %v after the kill", runs, time.Since(killedAt).Round(time.Millisecond))

	// Wait for the survivors to release their leases and count their ends.
	deadline = time.Now().Add(10 * time.Second)
	for {
		held := 0
		for _, id := range ids {
			if r, err := st.Run(ctx, id); err != nil || r.LeaseOwner != "" {
				held++
			}
		}
		if held == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Each of w1's runs was taken over by a survivor, after w1's lease
	// expired; no run's leases overlap.
	lastOwner := map[string]int{}
	takenOver := 0
	for _, id := range ids {
		h := checkLeaseHistory(t, st, id, owners)
		if len(h) > 0 {
			lastOwner[h[len(h)-1].Owner]++
		}
		l, ok := victim[id]
		if !ok {
			continue
		}
		i := slices.IndexFunc(h, func(r store.LeaseRecord) bool { return r.Token == l.Token })
		if i < 0 || h[i].Owner != "w1" {
			t.Errorf("run %s: w1's lease %d is not in its history: %+v", id, l.Token, h)
			continue
		}
		vl := h[i]
		victim[id] = store.Lease{RunID: id, Owner: vl.Owner, Token: vl.Token, Expiry: vl.Expiry}
		if vl.ReleasedAt != 0 {
			// The run ended between the snapshot and the kill.
			t.Logf("run %s: w1 released lease %d before the kill (%v)", id, vl.Token, time.Duration(vl.ReleasedAt-killedAt.UnixNano()))
			continue
		}
		if vl.Expiry > killedAt.UnixNano()+int64(clusterLeaseTTL) {
			t.Errorf("run %s: w1's lease %d expires %v after the kill; a lease lasts %v from its last renewal", id, vl.Token, time.Duration(vl.Expiry-killedAt.UnixNano()), clusterLeaseTTL)
		}
		if i+1 >= len(h) {
			t.Errorf("run %s: no claim after w1's lease %d: %+v", id, vl.Token, h)
			continue
		}
		next := h[i+1]
		if next.Owner == "w1" || next.ClaimedAt < vl.Expiry {
			t.Errorf("run %s: after w1's lease %d (expiry %d) came %+v; want a claim by a survivor at or after the expiry", id, vl.Token, vl.Expiry, next)
			continue
		}
		takenOver++
		t.Logf("run %s: %s took over %v after the kill, %v after w1's lease expired", id, next.Owner,
			time.Duration(next.ClaimedAt-killedAt.UnixNano()).Round(time.Millisecond), time.Duration(next.ClaimedAt-vl.Expiry).Round(time.Millisecond))
		if d := time.Duration(next.ClaimedAt - vl.Expiry); d > 5*time.Second {
			t.Errorf("run %s: taken over %v after w1's lease expired; want within a few polls", id, d)
		}
	}
	if takenOver == 0 {
		t.Fatalf("no run of w1 was taken over after the kill (%d were held mid-way)%s", len(victim), clusterTails(survivors...))
	}
	if n := lastOwner["w1"]; n > runs-takenOver {
		t.Errorf("w1 holds the last lease of %d runs; %d were taken over from it", n, takenOver)
	}

	// Exactly once among the survivors; none lost a lease.
	deadline = time.Now().Add(10 * time.Second)
	for {
		sum, want := 0.0, float64(lastOwner["w2"]+lastOwner["w3"])
		var ms []map[string]float64
		for _, w := range survivors {
			m := clusterMetrics(t, w)
			ms = append(ms, m)
			sum += m[endedCompleted]
		}
		if sum < want && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for i, w := range survivors {
			m := ms[i]
			t.Logf("%s: completed %v, claimed %v leases, lost %v", w.name, m[endedCompleted], m[`skein_leases_claimed_total{namespace="default"}`], m[`skein_leases_lost_total{namespace="default"}`])
			if got := m[endedCompleted]; got != float64(lastOwner[w.name]) {
				t.Errorf("%s counts %v runs completed; it holds the last lease of %d", w.name, got, lastOwner[w.name])
			}
			if v := m[`skein_leases_lost_total{namespace="default"}`]; v != 0 {
				t.Errorf("%s lost %v leases; want 0", w.name, v)
			}
		}
		if sum != want {
			t.Errorf("the survivors drove %v runs to completion; they hold the last lease of %v", sum, want)
		}
		break
	}

	// w1's leases are stale: they fence off every write.
	for id, l := range victim {
		before, err := st.LeaseHistory(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		stale := store.Outcome{Key: "zz-stale", Kind: "step", Function: "stale", Status: store.OutcomeOK,
			Value: []byte(`"written with a stale lease"`), Attempts: 1, Seq: 1000, UpdatedAt: time.Now()}
		err = st.Commit(ctx, store.Batch{Outcomes: []store.RunOutcome{{RunID: id, Outcome: stale}}, Fence: &l})
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("run %s: commit fenced by w1's stale lease %d: %v; want ErrLeaseLost", id, l.Token, err)
		}
		outs, err := st.Outcomes(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(outs, func(o store.Outcome) bool { return o.Key == stale.Key }) {
			t.Errorf("run %s: the stale commit wrote outcome %s", id, stale.Key)
		}
		if err := st.RenewLease(ctx, l, time.Now().Add(time.Hour).UnixNano()); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("run %s: renewing w1's stale lease %d: %v; want ErrLeaseLost", id, l.Token, err)
		}
		if err := st.ReleaseLease(ctx, l); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("run %s: releasing w1's stale lease %d: %v; want ErrLeaseLost", id, l.Token, err)
		}
		r, err := st.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != store.RunCompleted || !jsonEq(t, r.Result, result) || r.LeaseOwner != "" {
			t.Errorf("run %s after the stale writes: %s, result %s, lease %q; want completed with %s, no lease", id, r.Status, r.Result, r.LeaseOwner, result)
		}
		if after, err := st.LeaseHistory(ctx, id); err != nil || !slices.Equal(before, after) {
			t.Errorf("run %s: the stale lease changed the lease history (%v):\n  before %+v\n  after  %+v", id, err, before, after)
		}
	}
	if t.Failed() {
		t.Log(clusterTails(ws...))
	}
	for _, w := range survivors {
		w.stop(t)
	}
}

// TestClusterCancelAcrossWorkers: a run executing on one worker (a chain
// of steps, so it never suspends) is canceled through another worker's
// API. The worker running it hears of it at its next lease renewal, not
// only once the run would suspend: the cancellation is recorded while
// steps are still to run, and the run ends canceled (its steps still run:
// a canceled run may compensate).
func TestClusterCancelAcrossWorkers(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	st := openClusterStore(t, dsn)
	ctx := context.Background()
	w1 := startClusterWorker(t, dsn, "w1")
	deployServerModule(t, w1.skeinServer, nil)
	const steps = 12
	body := fmt.Sprintf(`{"module":"srv","workflow":"chain","input":{"n":%d,"ms":250},"id":"far"}`, steps)
	if r := w1.call(t, "POST", "/v1/runs", "", body); r.status != http.StatusCreated {
		t.Fatalf("start: %s", r)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := st.Run(ctx, "far")
		outs, oerr := st.Outcomes(ctx, "far")
		if err == nil && oerr == nil && r.LeaseOwner == "w1" && len(outs) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("w1 never ran the chain: %+v %v%s", r, err, clusterTails(w1))
		}
		time.Sleep(20 * time.Millisecond)
	}
	w2 := startClusterWorker(t, dsn, "w2")
	canceledAt := time.Now()
	if r := w2.call(t, "POST", "/v1/runs/far/cancel", "", `{"reason":"from w2"}`); r.status != http.StatusOK {
		t.Fatalf("cancel through w2: %s", r)
	}
	final := w2.awaitStatus(t, "far", "", "canceled", "completed", "failed")
	if final.Status != "canceled" || !strings.Contains(final.Error, "from w2") {
		t.Fatalf("run ended %s %q; want canceled by w2", final.Status, final.Error)
	}
	outs, err := st.Outcomes(ctx, "far")
	if err != nil {
		t.Fatal(err)
	}
	var cancelSeq, lastStep int64
	for _, o := range outs {
		if o.Key == store.CancelKey {
			cancelSeq = o.Seq
		} else {
			lastStep = max(lastStep, o.Seq)
		}
	}
	if cancelSeq == 0 || cancelSeq >= lastStep {
		t.Fatalf("cancellation recorded at seq %d, steps up to %d; want it delivered mid-run", cancelSeq, lastStep)
	}
	hist, err := st.LeaseHistory(ctx, "far")
	if err != nil || len(hist) != 1 || hist[0].Owner != "w1" {
		t.Errorf("lease history %+v, %v; want w1's lease alone (the run was never handed over)", hist, err)
	}
	t.Logf("canceled through w2; the run ended %s after the request", time.Since(canceledAt).Round(time.Millisecond))
}

// TestClusterTimerOnAnotherWorker: a run that suspended on a durable
// timer on one worker is woken by another when the timer comes due (the
// first has stopped meanwhile): timers are in the database, not in a
// worker.
func TestClusterTimerOnAnotherWorker(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	st := openClusterStore(t, dsn)
	w1 := startClusterWorker(t, dsn, "w1")
	deployServerModule(t, w1.skeinServer, nil)
	if r := w1.call(t, "POST", "/v1/runs", "", `{"module":"srv","workflow":"sleeper","input":{"ms":2500},"id":"nap"}`); r.status != http.StatusCreated {
		t.Fatalf("start: %s", r)
	}
	w1.awaitStatus(t, "nap", "", "suspended")
	w1.stop(t)
	w2 := startClusterWorker(t, dsn, "w2")
	if r := w2.awaitStatus(t, "nap", "", "completed"); string(r.Result) != `"slept 2500ms"` {
		t.Fatalf("result %s; want \"slept 2500ms\"", r.Result)
	}
	hist, err := st.LeaseHistory(context.Background(), "nap")
	if err != nil || len(hist) != 2 || hist[0].Owner != "w1" || hist[1].Owner != "w2" || hist[0].ReleasedAt == 0 {
		t.Errorf("lease history %+v, %v; want w1's lease released at the suspension, then w2's", hist, err)
	}
}
