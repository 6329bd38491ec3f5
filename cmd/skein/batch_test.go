package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/internal/testing/testgroup"
)

// startWaiters starts n runs of the waiter workflow (each waits for a
// promise: suspended until canceled), ids prefix-000..., and waits
// until each is suspended.
func startWaiters(t *testing.T, s *skeinServer, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%03d", prefix, i)
		want(t, "start "+id, s.call(t, "POST", "/v1/runs", "", `{"module":"srv","workflow":"waiter","input":{},"id":"`+id+`"}`), 201, "")
		ids = append(ids, id)
	}
	for _, id := range ids {
		s.awaitStatus(t, id, "", "suspended")
	}
	return ids
}

// startBatch posts a batch and returns it.
func (s *skeinServer) startBatch(t *testing.T, req client.BatchRequest) client.Batch {
	t.Helper()
	r := s.call(t, "POST", "/v1/batches", "", req)
	want(t, "POST /v1/batches", r, 202, "")
	return decodeJSON[client.Batch](t, "POST /v1/batches", r.body)
}

func (s *skeinServer) getBatch(t *testing.T, id string) client.Batch {
	t.Helper()
	r := s.call(t, "GET", "/v1/batches/"+id, "", nil)
	want(t, "GET /v1/batches/"+id, r, 200, "")
	return decodeJSON[client.Batch](t, "GET batch", r.body)
}

// awaitBatch polls a batch until ok holds (bounded by cmdTimeout).
func (s *skeinServer) awaitBatch(t *testing.T, id string, what string, ok func(client.Batch) bool) client.Batch {
	t.Helper()
	deadline := time.Now().Add(cmdTimeout)
	for {
		b := s.getBatch(t, id)
		if ok(b) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s: not %s within %v: %+v", id, what, cmdTimeout, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkRate: the batch's recorded action times hold its rate: n actions
// span at least (n-1)/rate.
func checkRate(t *testing.T, b client.Batch, n int64) {
	t.Helper()
	if b.StartedAt == nil || b.ActedAt == nil {
		t.Fatalf("batch %s has no action times: %+v", b.ID, b)
	}
	span := b.ActedAt.Sub(*b.StartedAt)
	min := time.Duration(float64(n-1) / b.Rate * float64(time.Second))
	if span < min {
		t.Errorf("batch %s acted on %d runs in %v; its rate %v/s allows no less than %v", b.ID, n, span, b.Rate, min)
	}
}

// TestBatchCancelServe: through a real skein serve (SQLite), a filter
// lists runs (API and CLI), a bad filter is a 400 naming the rule, a dry
// run lists what a batch would cancel and cancels nothing, skein runs
// cancel --where cancels exactly the runs selected at its rate and
// follows the progress, and a batch canceled midway stops there.
func TestBatchCancelServe(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	deployServerModule(t, s, nil)
	ids := startWaiters(t, s, "w", 12)
	want(t, "start echo", s.call(t, "POST", "/v1/runs", "", `{"module":"srv","workflow":"echo","input":"x","id":"e-1"}`), 201, "")
	s.awaitStatus(t, "e-1", "", "completed")

	// The filter in GET /v1/runs and skein runs list.
	r := s.call(t, "GET", "/v1/runs?where="+url.QueryEscape(`status in (suspended, running) and workflow = waiter and id in ("w-003", "w-011", e-1)`), "", nil)
	want(t, "GET /v1/runs?where", r, 200, "")
	if l := decodeJSON[client.RunList](t, "runs", r.body); len(l.Runs) != 2 || l.Runs[0].ID != "w-003" || l.Runs[1].ID != "w-011" {
		t.Errorf("GET /v1/runs?where= selected %+v; want w-003, w-011", l.Runs)
	}
	r = s.call(t, "GET", "/v1/runs?status=completed&where="+url.QueryEscape(`created > -1h`), "", nil)
	if l := decodeJSON[client.RunList](t, "runs", r.body); len(l.Runs) != 1 || l.Runs[0].ID != "e-1" {
		t.Errorf("where with status= selected %+v; want e-1", l.Runs)
	}
	list := s.cli(t, nil, "runs", "list", "--where", "workflow = echo")
	wantExit(t, list, 0, "e-1  completed  echo")
	if strings.Contains(list.stdout, "w-0") {
		t.Errorf("runs list --where 'workflow = echo' lists waiters:\n%s", list.stdout)
	}

	// Bad filters: 400 naming the rule, in the API and the CLI.
	r = s.call(t, "GET", "/v1/runs?where="+url.QueryEscape("status = bogus"), "", nil)
	want(t, "bad where", r, 400, "bad_request")
	if m := r.errMessage(); !strings.Contains(m, `offset 9 ("bogus")`) || !strings.Contains(m, "want one of pending") {
		t.Errorf("bad where: %q; want the offset, the term and the rule", m)
	}
	r = s.call(t, "POST", "/v1/batches", "", client.BatchRequest{Where: "workflow > waiter", Action: "cancel"})
	want(t, "bad batch filter", r, 400, "bad_request")
	if m := r.errMessage(); !strings.Contains(m, "workflow compares with =") {
		t.Errorf("bad batch filter: %q; want the rule", m)
	}
	want(t, "empty batch filter", s.call(t, "POST", "/v1/batches", "", client.BatchRequest{Action: "cancel"}), 400, "bad_request")
	want(t, "unknown action", s.call(t, "POST", "/v1/batches", "", client.BatchRequest{Where: "workflow = waiter", Action: "explode"}), 400, "bad_request")
	wantExit(t, s.cli(t, nil, "runs", "cancel", "--where", "colour = red"), 1, "unknown field \"colour\"")

	// A dry run lists and does nothing.
	dry := s.cli(t, nil, "runs", "cancel", "--where", "workflow = waiter and status = suspended", "--dry-run")
	wantExit(t, dry, 0, "would act on 12 runs; nothing was done", "w-000  suspended  waiter")
	if run := s.getRun(t, "w-000", ""); run.Status != "suspended" || run.CancelReason != "" {
		t.Fatalf("a dry run touched w-000: %+v", run)
	}

	// The batch, followed by the CLI: every selected run, once, at its rate.
	out := s.cli(t, nil, "runs", "cancel", "--where", `workflow = waiter and id in ("w-000","w-001","w-002","w-003","w-004","w-005","w-006","w-007")`,
		"--reason", "bulk", "--rate", "20")
	wantExit(t, out, 0, "cancel done, 8 selected, 8 done, 0 failed")
	var bt client.Batch
	for _, b := range decodeJSON[client.BatchList](t, "batches", s.call(t, "GET", "/v1/batches", "", nil).body).Batches {
		bt = b
	}
	if bt.Status != "done" || bt.Selected != 8 || bt.Done != 8 || bt.Failed != 0 || bt.Cursor != "w-007" {
		t.Errorf("the batch: %+v; want done, 8 of 8, cursor w-007", bt)
	}
	checkRate(t, bt, 8)
	for i, id := range ids {
		run := s.awaitStatus(t, id, "", "canceled", "suspended")
		if canceled := run.CancelReason == "bulk"; canceled != (i < 8) {
			t.Errorf("%s: status %s, cancel reason %q; want it canceled by the batch: %v", id, run.Status, run.CancelReason, i < 8)
		}
	}

	// Canceled midway: the batch stops; the runs after its cursor stay.
	more := startWaiters(t, s, "m", 20)
	b := s.startBatch(t, client.BatchRequest{Where: "workflow = waiter and status = suspended", Action: "cancel",
		Args: mustJSON(t, map[string]string{"reason": "mid"}), Rate: 10})
	s.awaitBatch(t, b.ID, "3 runs in", func(b client.Batch) bool { return b.Done >= 3 })
	want(t, "cancel the batch", s.call(t, "POST", "/v1/batches/"+b.ID+"/cancel", "", `{"reason":"enough"}`), 200, "")
	b = s.awaitBatch(t, b.ID, "ended", func(b client.Batch) bool { return b.Status != "running" })
	if b.Status != "canceled" || b.Cancel != "enough" || b.Selected != 24 || b.Done < 3 || b.Done >= 24 || b.Failed != 0 {
		t.Fatalf("the canceled batch: %+v; want canceled after 3 and before 24 of 24", b)
	}
	var canceled int64
	for _, id := range append(more, ids[8:]...) {
		run := s.getRun(t, id, "")
		if by := run.CancelReason == "mid"; by != (id <= b.Cursor) {
			t.Errorf("%s: cancel reason %q, cursor %s: a batch acts on the runs up to its cursor, and no other", id, run.CancelReason, b.Cursor)
		} else if by {
			canceled++
		}
	}
	if canceled != b.Done {
		t.Errorf("%d runs canceled by the batch; it counts %d", canceled, b.Done)
	}
	want(t, "unknown batch", s.call(t, "GET", "/v1/batches/nope", "", nil), 404, "not_found")
	st := s.cli(t, nil, "batch", "status", b.ID)
	wantExit(t, st, 0, "batch "+b.ID+": cancel canceled", "(cancel: enough)")
	wantExit(t, s.cli(t, nil, "batch", "list"), 0, b.ID, bt.ID)
}

// TestBatchResumedAfterKill: a batch over 50 runs goes on after its
// skein serve is SIGKILLed midway: a new skein serve on the same
// database claims it when its lease expires and finishes it from its
// cursor, every run acted on once (the counts match the runs), at the
// batch's rate.
func TestBatchResumedAfterKill(t *testing.T) {
	testgroup.Slow(t, "batches", "two skein serve processes, one killed, over 50 runs (about 6 s)")
	t.Parallel()
	db := filepath.Join(t.TempDir(), "skein.db")
	s := startServer(t, db, nil, "--lease-ttl", "500ms")
	deployServerModule(t, s, nil)
	ids := startWaiters(t, s, "k", 50)
	b := s.startBatch(t, client.BatchRequest{Where: "workflow = waiter", Action: "cancel",
		Args: mustJSON(t, map[string]string{"reason": "bulk"}), Rate: 25})
	mid := s.awaitBatch(t, b.ID, "15 runs in", func(b client.Batch) bool { return b.Done >= 15 })
	s.kill()
	if mid.Status != "running" || mid.Done >= 50 {
		t.Fatalf("the batch before the kill: %+v; want it running, midway", mid)
	}
	s2 := startServer(t, db, nil, "--lease-ttl", "500ms")
	b = s2.awaitBatch(t, b.ID, "ended", func(b client.Batch) bool { return b.Status != "running" })
	if b.Status != "done" || b.Selected != 50 || b.Done != 50 || b.Failed != 0 || b.Cursor != ids[49] {
		t.Fatalf("the batch after the restart: %+v; want done, 50 of 50 once each", b)
	}
	for _, id := range ids {
		if run := s2.awaitStatus(t, id, "", "canceled"); run.CancelReason != "bulk" {
			t.Errorf("%s: cancel reason %q, want bulk", id, run.CancelReason)
		}
	}
	s2.stop(t)
}

// TestBatchPostgres: a batch cancels the runs its filter selects through
// a skein serve on Postgres.
func TestBatchPostgres(t *testing.T) {
	t.Parallel()
	s := startPostgresServer(t, postgresSchema(t))
	deployServerModule(t, s, nil)
	ids := startWaiters(t, s, "p", 6)
	out := s.cli(t, nil, "runs", "cancel", "--where", `status = suspended and id in ("p-001", "p-002", "p-004")`, "--reason", "pg")
	wantExit(t, out, 0, "cancel done, 3 selected, 3 done, 0 failed")
	for i, id := range ids {
		run := s.awaitStatus(t, id, "", "canceled", "suspended")
		if by := run.CancelReason == "pg"; by != (i == 1 || i == 2 || i == 4) {
			t.Errorf("%s: status %s, cancel reason %q", id, run.Status, run.CancelReason)
		}
	}
}
