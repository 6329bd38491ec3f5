package main

import (
	"context"
	"encoding/json"

	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/check"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// diskFull is a store whose disk fills up for a run once the run has k
// settled outcomes: the commit that would add more fails, as every later
// one of that run, so the run stays as a worker that crashed there leaves
// it (running, with the journal up to its k-th settlement).
type diskFull struct {
	store.Store
	mu      sync.Mutex
	budget  map[string]int
	settled map[string]map[string]bool
	full    map[string]bool
}

func (d *diskFull) Commit(ctx context.Context, b store.Batch) error {
	d.mu.Lock()
	fresh := map[string]map[string]bool{}
	for _, o := range b.Outcomes {
		if o.Outcome.Status != store.OutcomePending && !d.settled[o.RunID][o.Outcome.Key] {
			if fresh[o.RunID] == nil {
				fresh[o.RunID] = map[string]bool{}
			}
			fresh[o.RunID][o.Outcome.Key] = true
		}
	}
	for run, keys := range fresh {
		if k, ok := d.budget[run]; ok && (d.full[run] || len(d.settled[run])+len(keys) > k) {
			d.full[run] = true
			d.mu.Unlock()
			return fmt.Errorf("run %s: the disk is full", run)
		}
	}
	for run, keys := range fresh {
		if d.settled[run] == nil {
			d.settled[run] = map[string]bool{}
		}
		for k := range keys {
			d.settled[run][k] = true
		}
	}
	d.mu.Unlock()
	return d.Store.Commit(ctx, b)
}

// provisionRuns writes to a new SQLite file runs of both provision
// workflows of examples/provision (version 1), stopped by a full disk
// after 0, 1 and 2 settlements (3 runs each; a run that settles 3
// completes), driven in the simulation so that each settlement is a
// commit of its own. It returns the file and the runs by the number of
// their settlements.
func provisionRuns(t *testing.T) (string, map[int][]string) {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "skein.db")
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := &diskFull{Store: st, budget: map[string]int{}, settled: map[string]map[string]bool{}, full: map[string]bool{}}
	h, err := host.New(ctx, host.Config{Store: d, Evict: host.EvictNever, Simulation: &host.Simulation{Seed: 3},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./examples/provision"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(ctx, "provision", wasm)
	if err != nil {
		t.Fatal(err)
	}
	byK := map[int][]string{}
	for _, wf := range []string{"provision_vm", "provision_vm_named"} {
		for k := range 3 {
			for j := range 3 {
				id := fmt.Sprintf("%s-k%d-%d", strings.TrimPrefix(wf, "provision_"), k, j)
				d.mu.Lock()
				d.budget[id] = k
				d.mu.Unlock()
				if _, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: wf, ID: id, Input: json.RawMessage(`{"name":"db","size":"large"}`)}); err != nil {
					t.Fatal(err)
				}
				if _, err := h.Drive(ctx, id, host.DriveOptions{}); err == nil || !strings.Contains(err.Error(), "the disk is full") {
					t.Fatalf("run %s: %v, want the full disk to stop it", id, err)
				}
				r, err := st.Run(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				outs, err := st.Outcomes(ctx, id)
				if err != nil || r.Status != store.RunRunning || len(outs) != k {
					t.Fatalf("run %s: %v %s with %d records, want running with %d", id, err, r.Status, len(outs), k)
				}
				if wf == "provision_vm" {
					byK[k] = append(byK[k], id)
				}
			}
		}
	}
	h.Close(ctx)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return db, byK
}

// A v2 of examples/provision inserts a step after create_vm. Positional
// (provision_vm): exactly the runs that recorded a step of the fork
// break, each named with its key, recorded function and the new step;
// named (provision_vm_named): every run replays cleanly.
func TestCheckUpgradeProvision(t *testing.T) {
	t.Parallel()
	db, byK := provisionRuns(t)
	v2 := wasmbuild.Build(t, "./examples/provision/v2")
	r := skein(t, "", "check", "--upgrade", v2, "--db", db, "--workflow", "provision_vm", "--json")
	if r.code != exitFailed {
		t.Fatalf("want exit 1:\n%s", r)
	}
	var rep upgradeJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	var broken []string
	for _, run := range rep.Runs {
		if run.OK() {
			continue
		}
		broken = append(broken, run.ID)
		want := map[string]string{"2.0.1": "attach_ip", "2.1.1": "setup_security_group"}[run.Key]
		if run.Break != check.BreakSkipped || want == "" || run.Recorded != want || run.New != "check_quota" || run.Status != store.RunRunning || run.Ops != 2 {
			t.Errorf("run %+v: want the skipped fork step (2.0.1 attach_ip or 2.1.1 setup_security_group) and the new check_quota", run)
		}
	}
	if !slices.Equal(broken, byK[2]) || rep.Checked != 9 || rep.Broken != 3 || rep.OK {
		t.Fatalf("broken %q, want exactly the runs past the insertion %q:\n%s", broken, byK[2], r.stdout)
	}
	r = skein(t, "", "check", "--upgrade", v2, "--db", db, "--workflow", "provision_vm")
	t.Logf("%s", r.stdout)
	line := fmt.Sprintf(`BREAKS %s (provision_vm, running, 2 records): skipped recorded work at key "2.`, byK[2][0])
	if r.code != exitFailed || !strings.Contains(r.stdout, line) || !strings.Contains(r.stdout, "ok     vm-k1-0 (provision_vm, running, 1 records): replays cleanly, continues") ||
		!strings.Contains(r.stdout, "upgrade check: 9 runs of provision_vm (suspended, running): 6 replay cleanly, 3 WOULD BREAK") {
		t.Fatalf("want %q, the clean runs and the summary:\n%s", line, r)
	}
	r = skein(t, "", "check", "--upgrade", v2, "--db", db, "--workflow", "provision_vm_named", "--broken-only")
	if r.code != 0 || r.stdout == "" || !strings.HasPrefix(r.stdout, "upgrade check: 9 runs of provision_vm_named (suspended, running): 9 replay cleanly, 0 would break (") {
		t.Fatalf("named: want exit 0, every run clean:\n%s", r)
	}
}

func TestCheckUpgradeBadInput(t *testing.T) {
	t.Parallel()
	db, _ := provisionRuns(t)
	v2 := wasmbuild.Build(t, "./examples/provision/v2")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check", "--upgrade", v2, "--db", db, "--runs", "completed"}, exitUsage, `--runs "completed": want a comma-separated list of pending, running, suspended`},
		{[]string{"check", "--upgrade", v2, "--db", db, "extra.wasm"}, exitUsage, `--upgrade takes the new module; got another argument "extra.wasm"`},
		{[]string{"check", "--upgrade", v2, "--db", db, "--workflow", "nope"}, exitFailed, `the new module has no workflow "nope"`},
		{[]string{"check", "--upgrade", v2, "--db", filepath.Join(t.TempDir(), "none.db")}, exitFailed, "no database"},
		{[]string{"check", "--upgrade", "missing.wasm", "--db", db}, exitFailed, "missing.wasm"},
		{[]string{"check", v2, "--db", db}, exitUsage, "--db goes with --upgrade NEW.wasm"},
		{[]string{"check", "--upgrade", v2, "--db", db, "--schedules", "5"}, exitUsage, "--schedules is a flag of the check of seeded schedules, not of --upgrade"},
	} {
		r := skein(t, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("want exit %d and %q:\n%s", tc.code, tc.want, r)
		}
	}
}
