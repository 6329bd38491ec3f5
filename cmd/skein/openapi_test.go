package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/internal/testing/openapitest"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// The walkthroughs of the guide, through a recording proxy in front of
// a real skein serve: every request the CLI, package client and curl-like
// calls make and every answer they get is validated against the OpenAPI
// document the server serves at GET /v1/openapi.json (server/openapi.json).

const walkToken = "walk-token"

// walkServer is a skein serve with a token and a recording proxy in front.
type walkServer struct {
	direct *skeinServer // the server itself
	via    *skeinServer // the same, through the proxy
	rec    *openapitest.Recorder
	c      *client.Client // package client, through the proxy
	env    []string       // the CLI's: the token
}

func startWalkServer(t *testing.T) *walkServer {
	t.Helper()
	s := startServer(t, filepath.Join(t.TempDir(), "walk.db"), []string{"SKEIN_TOKEN=" + walkToken, "SKEIN_HOOK_DIGEST=" + walkSecret}, "--poll", "50ms")
	rec, err := openapitest.NewRecorder(s.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close)
	c, err := client.New(rec.URL, client.WithToken(walkToken))
	if err != nil {
		t.Fatal(err)
	}
	via := &skeinServer{url: rec.URL, cmd: s.cmd, stderr: s.stderr, exited: s.exited}
	return &walkServer{direct: s, via: via, rec: rec, c: c, env: []string{"SKEIN_TOKEN=" + walkToken}}
}

// cli runs a client command through the proxy and checks its exit code.
func (w *walkServer) cli(t *testing.T, code int, args ...string) result {
	t.Helper()
	r := w.via.cli(t, w.env, args...)
	wantExit(t, r, code)
	return r
}

// raw sends one request through the proxy with the headers given (name,
// value pairs) and returns the answer.
func (w *walkServer) raw(t *testing.T, method, path string, body []byte, hdr ...string) reply {
	t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(hdr); i += 2 {
		m[hdr[i]] = hdr[i+1]
	}
	return w.via.send(t, method, path, m, body)
}

// post is raw for a JSON write with the token.
func (w *walkServer) post(t *testing.T, path, body string) reply {
	t.Helper()
	return w.raw(t, "POST", path, []byte(body), "Content-Type", "application/json", "Authorization", "Bearer "+walkToken)
}

// TestOpenAPIWalkthrough runs the walkthroughs of docs/getting-started.md,
// docs/serving.md (the CLI, then curl), docs/schedules.md,
// docs/activities.md (a worker's claim, heartbeat, fail and complete) and
// docs/operations.md's search attributes
// against a real skein serve, with errors of each kind the API answers on
// the way, and validates every exchange against the served OpenAPI
// document: each request's operation, parameters and (when accepted)
// body, each answer's status, headers and body. Every operation of the
// document must have been answered with a 2xx at least once.
func TestOpenAPIWalkthrough(t *testing.T) {
	t.Parallel()
	w := startWalkServer(t)
	t.Run("walks", func(t *testing.T) { // the three at once, on one server
		t.Run("serving", func(t *testing.T) {
			t.Parallel()
			walkServing(t, w)
			walkErrors(t, w)
		})
		t.Run("schedules", func(t *testing.T) {
			t.Parallel()
			walkSchedules(t, w)
			walkBatches(t, w)
		})
		t.Run("activities", func(t *testing.T) {
			t.Parallel()
			walkActivities(t, w)
		})
		t.Run("attributes", func(t *testing.T) {
			t.Parallel()
			walkAttributes(t, w) // attrs_walk_test.go
		})
		t.Run("namespaces", func(t *testing.T) {
			t.Parallel()
			walkNamespaces(t, w) // namespace_walk_test.go
		})
		t.Run("keys", func(t *testing.T) {
			t.Parallel()
			walkKeys(t, w) // keys_walk_test.go
		})
	})

	// The document, as served (which is server/openapi.json).
	r := w.raw(t, "GET", "/v1/openapi.json", nil, "Authorization", "Bearer "+walkToken)
	want(t, "GET /v1/openapi.json", r, 200, "")
	file, err := os.ReadFile(filepath.Join(wasmbuild.Root(), "server", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.body, file) {
		t.Errorf("GET /v1/openapi.json is not server/openapi.json")
	}
	doc, err := openapitest.Load(r.body)
	if err != nil {
		t.Fatalf("the served document: %v", err)
	}
	answered := map[string][]int{}
	for _, x := range w.rec.Exchanges() {
		op, err := doc.Check(x)
		if err != nil {
			t.Error(err)
		}
		if op != "" {
			answered[op] = append(answered[op], x.Status)
		}
	}
	for _, op := range doc.Operations() {
		if !slices.ContainsFunc(answered[op], func(s int) bool { return s >= 200 && s < 300 }) {
			t.Errorf("operation %s was not answered with a 2xx in the walkthrough (statuses %v): add a call of it", op, answered[op])
		}
	}
	for _, op := range slices.Sorted(maps.Keys(answered)) {
		slices.Sort(answered[op])
		t.Logf("%s: %v", op, slices.Compact(answered[op]))
	}
}

// walkServing: docs/getting-started.md and docs/serving.md, the CLI then
// curl, with the calls of package client for what the CLI does not show.
func walkServing(t *testing.T, w *walkServer) {
	ctx := context.Background()
	wasm := wasmbuild.Build(t, "./examples/approval")
	w.cli(t, 0, "deploy", wasm, "--name", "approvals")
	w.cli(t, 0, "modules")
	w.cli(t, 0, "start", "approvals", "--workflow", "approval", "--input", `{"request":"laptop"}`, "--id", "r1")
	w.cli(t, 0, "wait", "r1", "--issued", "decision", "--timeout", "20s")
	w.cli(t, 0, "status", "r1") // suspended, waiting on its promise and timer
	ops, err := w.c.Ops(ctx, "r1")
	if err != nil || ops.Waiting == nil || len(ops.Waiting.Promises) != 1 || len(ops.Waiting.Timers) != 1 {
		t.Errorf("ops of r1 while it waits: %+v, %v; want a promise and a timer", ops, err)
	}
	w.cli(t, 0, "resolve", "r1.decision", "--value", `{"approved":true,"by":"ana"}`)
	if r := w.cli(t, 0, "wait", "r1", "--timeout", "20s"); !strings.Contains(r.stdout, "ticket:laptop approved by ana") {
		t.Errorf("wait r1 printed %q", r.stdout)
	}
	w.cli(t, 0, "inspect", "r1")
	w.cli(t, 0, "start", "approvals", "--workflow", "approval", "--input", `{"request":"desk"}`, "--id", "r2")
	w.cli(t, 0, "wait", "r2", "--issued", "decision", "--timeout", "20s")
	// docs/operations.md, "Pausing runs": hold r2, let it go, move it to
	// the module the name points at now.
	w.cli(t, 0, "pause", "r2", "--reason", "checking the budget")
	w.cli(t, 0, "unpause", "r2")
	w.cli(t, 0, "resume", "r2", "--module", "approvals")
	w.cli(t, 0, "wait", "r2", "--issued", "decision", "--timeout", "20s")
	w.cli(t, 0, "cancel", "r2", "--reason", "not needed")
	w.cli(t, exitFailed, "wait", "r2", "--timeout", "20s")

	// The same with curl.
	bin, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "upload again", w.raw(t, "POST", "/v1/modules?name=approvals", bin,
		"Content-Type", "application/wasm", "Authorization", "Bearer "+walkToken), 200, "")
	want(t, "start r3", w.post(t, "/v1/runs", `{"module":"approvals","workflow":"approval","input":{"request":"chair"},"id":"r3"}`), 201, "")
	want(t, "start r3 again", w.post(t, "/v1/runs", `{"module":"approvals","workflow":"approval","input":{"request":"chair"},"id":"r3"}`), 200, "")
	w.cli(t, 0, "wait", "r3", "--issued", "decision", "--timeout", "20s")
	want(t, "settle r3", w.post(t, "/v1/promises/r3.decision", `{"value":{"approved":false,"by":"bo"}}`), 200, "")
	want(t, "settle r3 again", w.post(t, "/v1/promises/r3.decision", `{"value":{"approved":false,"by":"bo"}}`), 200, "")
	w.cli(t, 0, "wait", "r3", "--timeout", "20s")
	if _, err := w.c.Outcomes(ctx, "r3"); err != nil {
		t.Error(err)
	}
	// Reset the canceled r2 to its cancellation: the new run, without it,
	// waits on a decision of its own.
	want(t, "reset r2", w.post(t, "/v1/runs/r2/reset", `{"to":"!cancel"}`), 201, "")
	w.cli(t, 0, "wait", "r2~reset-1", "--issued", "decision", "--timeout", "20s")
	w.cli(t, 0, "status", "r2~reset-1")

	// What the CLI does not show.
	if _, err := w.c.Module(ctx, "approvals"); err != nil {
		t.Error(err)
	}
	page, err := w.c.Runs(ctx, client.RunFilter{Status: "completed", Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Errorf("first page of completed runs: %+v, %v; want a next cursor", page, err)
	} else if _, err := w.c.Runs(ctx, client.RunFilter{Status: "completed", Limit: 1, Cursor: page.NextCursor}); err != nil {
		t.Error(err)
	}
	for _, id := range []string{"r1", "r2"} {
		if _, err := w.c.Ops(ctx, id); err != nil {
			t.Error(err)
		}
		if _, err := w.c.Leases(ctx, id); err != nil {
			t.Error(err)
		}
	}

	// Retention: a dry run of a prune (walkErrors deletes a run).
	w.cli(t, 0, "runs", "prune", "--older-than", "3650d", "--dry-run")
}

// walkErrors: an answer of each kind of error the walkthrough can meet.
func walkErrors(t *testing.T, w *walkServer) {
	auth := []string{"Authorization", "Bearer " + walkToken}
	for _, c := range []struct {
		what, method, path, body string
		hdr                      []string
		status                   int
		code                     string
	}{
		{"no token", "GET", "/v1/runs", "", nil, 401, "unauthorized"},
		{"wrong token", "POST", "/v1/runs", `{}`, []string{"Content-Type", "application/json", "Authorization", "Bearer nope"}, 401, "unauthorized"},
		{"another origin", "GET", "/v1/runs", "", append([]string{"Origin", "https://evil.example"}, auth...), 403, "forbidden"},
		{"unknown run", "GET", "/v1/runs/nope", "", auth, 404, "not_found"},
		{"unknown outcomes", "GET", "/v1/runs/nope/outcomes", "", auth, 404, "not_found"},
		{"unknown module", "GET", "/v1/modules/nope", "", auth, 404, "not_found"},
		{"bad status", "GET", "/v1/runs?status=sleepy", "", auth, 400, "bad_request"},
		{"bad limit", "GET", "/v1/runs?limit=0", "", auth, 400, "bad_request"},
		{"unknown field", "POST", "/v1/runs", `{"module":"approvals","x":1}`, append([]string{"Content-Type", "application/json"}, auth...), 400, "bad_request"},
		{"text body", "POST", "/v1/runs", `{}`, append([]string{"Content-Type", "text/plain"}, auth...), 415, "unsupported_media_type"},
		{"not a module", "POST", "/v1/modules", "not wasm", append([]string{"Content-Type", "application/wasm"}, auth...), 400, "invalid_module"},
		{"cancel an ended run", "POST", "/v1/runs/r1/cancel", "", append([]string{"Content-Type", "application/json"}, auth...), 409, "conflict"},
		{"settle otherwise", "POST", "/v1/promises/r3.decision", `{"error":"no"}`, append([]string{"Content-Type", "application/json"}, auth...), 409, "conflict"},
		{"unknown promise", "POST", "/v1/promises/r3.nope", `{"value":1}`, append([]string{"Content-Type", "application/json"}, auth...), 404, "not_found"},
		{"reset to an unknown key", "POST", "/v1/runs/r2~reset-1/reset", `{"to":"nope"}`, append([]string{"Content-Type", "application/json"}, auth...), 400, "bad_request"},
		{"reset a run reset", "POST", "/v1/runs/r2/reset", `{"to":"1"}`, append([]string{"Content-Type", "application/json"}, auth...), 409, "conflict"},
	} {
		want(t, c.what, w.raw(t, c.method, c.path, []byte(c.body), c.hdr...), c.status, c.code)
	}
	// Retention: the delete of an ended run, last, as the cases above
	// ask about r2.
	if err := w.c.DeleteRun(context.Background(), "r2"); err != nil {
		t.Errorf("DeleteRun(r2), a run reset: %v", err)
	}
}

const walkSecret = "walk-secret"

// walkSchedules: docs/schedules.md, a schedule and a signed webhook.
func walkSchedules(t *testing.T, w *walkServer) {
	ctx := context.Background()
	w.cli(t, 0, "deploy", wasmbuild.Build(t, "./examples/digest"), "--name", "digest")
	w.cli(t, 0, "schedule", "create", "daily", "--cron", "0 7 * * *", "--timezone", "Europe/Paris", "--module", "digest", "--input", `{"feed":"releases"}`)
	w.cli(t, 0, "schedule", "list")
	if _, err := w.c.Schedule(ctx, "daily"); err != nil {
		t.Error(err)
	}
	w.cli(t, 0, "schedule", "pause", "daily")
	w.cli(t, 0, "schedule", "resume", "daily")
	w.cli(t, 0, "schedule", "trigger", "daily")
	want(t, "a schedule of a taken name", w.post(t, "/v1/schedules", `{"name":"daily","cron":"@daily","module":"digest"}`), 409, "conflict")
	w.cli(t, 0, "schedule", "delete", "daily")
	if _, err := w.c.Schedule(ctx, "daily"); !client.IsNotFound(err) {
		t.Errorf("a deleted schedule: %v; want not found", err)
	}

	w.cli(t, 0, "hook", "create", "digest-now", "--module", "digest", "--secret-env", "SKEIN_HOOK_DIGEST", "--scheme", "timestamped")
	w.cli(t, 0, "hook", "list")
	if _, err := w.c.Hook(ctx, "digest-now"); err != nil {
		t.Error(err)
	}
	body := []byte(`{"feed":"security","top":2}`)
	now := time.Now().Unix()
	sig := signTS(walkSecret, now, body)
	first := w.raw(t, "POST", "/v1/hooks/digest-now?src=walk", body, "Skein-Signature", sig, "Idempotency-Key", "d-1")
	want(t, "a signed delivery", first, 201, "")
	want(t, "the same delivery replayed", w.raw(t, "POST", "/v1/hooks/digest-now?src=walk", body, "Skein-Signature", sig, "Idempotency-Key", "d-1"), 401, "unauthorized")
	want(t, "a retry signed again", w.raw(t, "POST", "/v1/hooks/digest-now?src=walk", body,
		"Skein-Signature", signTS(walkSecret, now-1, body), "Idempotency-Key", "d-1"), 200, "")
	sum := sha256.Sum256([]byte("d-1"))
	id := "hook:digest-now:" + hex.EncodeToString(sum[:])[:32]
	if !strings.Contains(string(first.body), `"id":"`+id+`"`) {
		t.Errorf("the delivery's run is not %s: %s", id, first.body)
	}
	if r := w.cli(t, 0, "wait", id, "--timeout", "20s"); !strings.Contains(r.stdout, "security digest") {
		t.Errorf("wait %s printed %q", id, r.stdout)
	}
	w.cli(t, 0, "hook", "delete", "digest-now")
	want(t, "a delivery to a deleted hook", w.raw(t, "POST", "/v1/hooks/digest-now", body), 404, "not_found")
}

// walkBatches: docs/operations.md, "Bulk actions": a filter, a dry run,
// a batch that cancels a waiting run, its status and cancel.
func walkBatches(t *testing.T, w *walkServer) {
	ctx := context.Background()
	w.cli(t, 0, "deploy", wasmbuild.Build(t, serverWorkflows), "--name", "srvwalk")
	if _, _, err := w.c.Start(ctx, client.StartRequest{Module: "srvwalk", Workflow: "waiter", Input: json.RawMessage(`{}`), ID: "walk-wait-1"}); err != nil {
		t.Fatal(err)
	}
	w.direct.awaitStatus(t, "walk-wait-1", walkToken, "suspended")
	const where = `id = walk-wait-1 and module = srvwalk and status = suspended`
	w.cli(t, 0, "runs", "list", "--where", where)
	w.cli(t, 0, "runs", "cancel", "--where", where, "--dry-run")
	want(t, "a batch with a bad filter", w.post(t, "/v1/batches", `{"where":"status = bogus","action":"cancel"}`), 400, "bad_request")
	w.cli(t, 0, "runs", "cancel", "--where", where, "--reason", "walk")
	bs, err := w.c.Batches(ctx, 1)
	if err != nil || len(bs) != 1 || bs[0].Status != "done" || bs[0].Done != 1 {
		t.Fatalf("the batch: %+v, %v; want done, 1 run", bs, err)
	}
	w.cli(t, 0, "batch", "status", bs[0].ID)
	w.cli(t, 0, "batch", "cancel", bs[0].ID) // ended: returned as it is
}

// walkActivities: docs/activities.md, with this test as the worker of
// examples/order: it claims each task, heartbeats, fails the first
// charge and completes the rest.
func walkActivities(t *testing.T, w *walkServer) {
	ctx := context.Background()
	w.cli(t, 0, "deploy", wasmbuild.Build(t, "./examples/order"), "--name", "order")
	w.cli(t, 0, "start", "order", "--id", "o-1", "--input", `{"id":"o-1","item":"book","qty":2,"card":"flaky"}`)
	claim := func(name string, attempt int) client.ClaimedTask {
		t.Helper()
		ts, err := w.c.ClaimTasks(ctx, client.ClaimRequest{Worker: "w1", Names: []string{"reserve-stock", "charge", "release-stock"}, Max: 16, WaitMS: 10000})
		if err != nil || len(ts) != 1 || ts[0].Name != name || ts[0].Attempt != attempt {
			t.Fatalf("claim: %+v, %v; want %s attempt %d", ts, err, name, attempt)
		}
		return ts[0]
	}
	ref := func(c client.ClaimedTask) client.TaskRef {
		return client.TaskRef{RunID: c.RunID, Key: c.Key, Attempt: c.Attempt, Worker: "w1"}
	}
	reserve := claim("reserve-stock", 1)
	if _, err := w.c.HeartbeatTask(ctx, client.HeartbeatRequest{TaskRef: ref(reserve), Progress: json.RawMessage(`{"done":50}`)}); err != nil {
		t.Error(err)
	}
	w.cli(t, 0, "status", "o-1") // waits on a claimed task
	if ts, err := w.c.RunTasks(ctx, "o-1"); err != nil || len(ts) != 1 || ts[0].State != "claimed" {
		t.Errorf("tasks of o-1: %+v, %v; want one claimed", ts, err)
	}
	if _, err := w.c.CompleteTask(ctx, client.CompleteRequest{TaskRef: ref(reserve), Result: json.RawMessage(`{"id":"res-o-1.1","item":"book","qty":2}`)}); err != nil {
		t.Error(err)
	}
	charge := claim("charge", 1)
	if e, err := w.c.FailTask(ctx, client.FailRequest{TaskRef: ref(charge), Error: "payment gateway unavailable"}); err != nil || !e.Retry {
		t.Errorf("fail the first charge: %+v, %v; want a retry", e, err)
	}
	if _, err := w.c.HeartbeatTask(ctx, client.HeartbeatRequest{TaskRef: ref(charge)}); !errors.Is(err, client.CodeConflict) {
		t.Errorf("a heartbeat of the failed attempt: %v; want a conflict", err)
	}
	charge = claim("charge", 2)
	if _, err := w.c.CompleteTask(ctx, client.CompleteRequest{TaskRef: ref(charge), Result: json.RawMessage(`{"id":"rcpt-o-1.2","amount":2}`)}); err != nil {
		t.Error(err)
	}
	unknown := client.CompleteRequest{TaskRef: client.TaskRef{RunID: "o-1", Key: "nope", Attempt: 1, Worker: "w1"}, Result: json.RawMessage(`1`)}
	if _, err := w.c.CompleteTask(ctx, unknown); !client.IsNotFound(err) {
		t.Errorf("complete an unknown task: %v; want not found", err)
	}
	if r := w.cli(t, 0, "wait", "o-1", "--timeout", "20s"); !strings.Contains(r.stdout, `"receipt":"rcpt-o-1.2"`) {
		t.Errorf("wait o-1 printed %q", r.stdout)
	}
	w.cli(t, 0, "inspect", "o-1")
	// The worker stream, opened and closed at once (its frames: server's TestTaskStream).
	r := w.raw(t, "POST", "/v1/tasks/stream", []byte(`{"type":"hello","worker":"w2","names":["charge"]}`+"\n"),
		"Content-Type", "application/x-ndjson", "Authorization", "Bearer "+walkToken)
	want(t, "POST /v1/tasks/stream", r, 200, "")
	if !strings.HasPrefix(string(r.body), `{"type":"ready"`) {
		t.Errorf("POST /v1/tasks/stream answered %q; want a ready frame", r.body)
	}
	if _, err := w.c.RunTasks(ctx, "o-1"); err != nil {
		t.Error(err)
	}
}
