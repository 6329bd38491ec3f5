package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBackupRestoreUnderLoad: `skein backup` of the database a `skein
// serve` is writing, while runs execute and others wait on promises;
// then the server is killed, the backup is restored into a new folder
// and served, and every run the backup holds completes there, every
// outcome it had recorded unchanged.
func TestBackupRestoreUnderLoad(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	// A short lease: the runs the backup holds as executing resume once
	// the leases of the server that was backed up expire.
	s := startServer(t, db, nil, "--lease-ttl", "1s")
	deployServerModule(t, s, nil)
	const chains, waiters, n = 6, 3, 40
	for i := range waiters {
		body := fmt.Sprintf(`{"id":"wait-%d","module":"srv","workflow":"waiter","input":{}}`, i)
		want(t, "start waiter", s.call(t, "POST", "/v1/runs", "", body), 201, "")
	}
	for i := range waiters { // each waits on its promise before the chains start
		s.awaitOutcome(t, fmt.Sprintf("wait-%d", i), "approve")
	}
	for i := range chains {
		body := fmt.Sprintf(`{"id":"chain-%d","module":"srv","workflow":"chain","input":{"n":%d,"ms":25}}`, i, n)
		want(t, "start chain", s.call(t, "POST", "/v1/runs", "", body), 201, "")
	}
	for deadline := time.Now().Add(cmdTimeout); len(s.outcomes(t, "chain-0", "").Outcomes) < 3; {
		if time.Now().After(deadline) {
			t.Fatal("chain-0 recorded no 3 outcomes in time")
		}
		time.Sleep(10 * time.Millisecond)
	}

	out := filepath.Join(t.TempDir(), "backup.db")
	r := skeinEnv(t, nil, "backup", "--db", db, out, "--json")
	wantExit(t, r, 0)
	var stats struct {
		Runs  int   `json:"runs"`
		Bytes int64 `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &stats); err != nil || stats.Runs != chains+waiters || stats.Bytes <= 0 {
		t.Fatalf("backup --json: %s (%v); want %d runs", r.stdout, err, chains+waiters)
	}
	s.kill()
	saved := readOutcomes(t, out)
	unfinished := runStatuses(t, out)

	restored := filepath.Join(t.TempDir(), "skein.db")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(restored, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, restored, nil)
	for i := range waiters {
		want(t, "settle", s2.call(t, "POST", fmt.Sprintf("/v1/promises/wait-%d.approve", i), "", `{"value":"yes"}`), 200, "")
	}
	for i := range chains {
		run := s2.awaitStatus(t, fmt.Sprintf("chain-%d", i), "", "completed", "failed")
		if run.Status != "completed" || string(run.Result) != fmt.Sprint(n*(n+1)/2) {
			t.Errorf("chain-%d after the restore: %s %s %q", i, run.Status, run.Result, run.Error)
		}
	}
	for i := range waiters {
		if run := s2.awaitStatus(t, fmt.Sprintf("wait-%d", i), "", "completed", "failed"); string(run.Result) != `"approved: yes"` {
			t.Errorf("wait-%d after the restore: %s %s %q", i, run.Status, run.Result, run.Error)
		}
	}
	s2.stop(t)
	after := readOutcomes(t, restored)
	for k, v := range saved {
		if after[k] != v {
			t.Errorf("outcome %s was %s in the backup, %s after the restore", k, v, after[k])
		}
	}
	open := 0
	for _, st := range unfinished {
		if st != "completed" {
			open++
		}
	}
	if open <= waiters {
		t.Errorf("the backup holds %d unfinished runs (%v): no chain was taken mid-way", open, unfinished)
	}
	t.Logf("the backup held %d outcomes and %d unfinished runs; all completed after the restore", len(saved), open)
}

// runStatuses reads every run's status from the database file at path.
func runStatuses(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := openRO(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), `SELECT id, status FROM runs`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			t.Fatal(err)
		}
		out[id] = status
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
