package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
	"github.com/skeinrun/skein/worker"
)

// streamFixture is a working host with remote activities, its API served
// over HTTP, and testdata/workflows/remote deployed.
type streamFixture struct {
	h   *host.Host
	srv *httptest.Server
	c   *client.Client
	mod string
}

func newStreamFixture(t *testing.T, lease time.Duration) *streamFixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Config{Store: st, RemoteActivities: true, CacheDir: testcache.Shared(), CompileTimeout: -1, TaskLeaseTTL: lease})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWork := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- h.Work(wctx, host.WorkOptions{Poll: 20 * time.Millisecond}) }()
	srv := httptest.NewServer(New(h, Options{Stop: wctx}))
	t.Cleanup(func() {
		stopWork()
		<-worked
		srv.Close()
		h.Close(ctx)
		st.Close()
	})
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/remote"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(ctx, "remote", wasm)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &streamFixture{h: h, srv: srv, c: c, mod: m.Hash}
}

func (f *streamFixture) start(t *testing.T, id, in string) {
	t.Helper()
	if _, err := f.h.Start(context.Background(), host.StartOptions{Module: f.mod, Workflow: "calls", Input: json.RawMessage(in), ID: id}); err != nil {
		t.Fatal(err)
	}
}

func (f *streamFixture) open(t *testing.T, worker string, credit int) *client.TaskStream {
	t.Helper()
	s, ready, err := f.c.OpenTaskStream(context.Background(), client.StreamFrame{Type: client.FrameHello, Worker: worker, Names: []string{"echo"}, Credit: credit})
	if err != nil {
		t.Fatal(err)
	}
	if ready.Worker != worker {
		t.Errorf("ready frame %+v; want it to name worker %q", ready, worker)
	}
	t.Cleanup(s.Close)
	return s
}

// recv returns the next frame of s, of type want.
func recv(t *testing.T, s *client.TaskStream, want string) client.StreamFrame {
	t.Helper()
	f, err := s.Recv()
	if err != nil {
		t.Fatalf("recv (want a %s frame): %v", want, err)
	}
	if f.Type != want {
		t.Fatalf("got a %s frame %+v; want %s", f.Type, f, want)
	}
	return f
}

func send(t *testing.T, s *client.TaskStream, f ...client.StreamFrame) {
	t.Helper()
	if err := s.Send(f...); err != nil {
		t.Fatal(err)
	}
}

func (f *streamFixture) await(t *testing.T, id string) (store.Run, []host.Outcome) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := f.h.Await(ctx, id)
	if err != nil {
		t.Fatalf("await %s: %v", id, err)
	}
	_, outs, err := f.h.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return r, outs
}

// TestTaskStream: a task is pushed as the run creates it; a heartbeat
// extends its lease; one results frame ends it and reports an unknown
// task; the same result sent again is a conflict and changes nothing.
func TestTaskStream(t *testing.T) {
	f := newStreamFixture(t, 2*time.Second)
	s := f.open(t, "w", 4)
	f.start(t, "s-1", `{"n":1,"name":"echo"}`)
	tasks := recv(t, s, client.FrameTasks).Tasks
	if len(tasks) != 1 || tasks[0].RunID != "s-1" || tasks[0].Key != "1" || tasks[0].Attempt != 1 || string(tasks[0].Input) != "0" {
		t.Fatalf("pushed tasks %+v; want s-1 key 1 attempt 1 with input 0", tasks)
	}
	at := client.StreamAttempt{RunID: "s-1", Key: "1", Attempt: 1}
	time.Sleep(10 * time.Millisecond) // the extended lease ends later than the first
	send(t, s, client.StreamFrame{Type: client.FrameHeartbeats, Heartbeats: []client.StreamHeartbeat{{StreamAttempt: at, Progress: json.RawMessage(`{"done":1}`)}}})
	leases := recv(t, s, client.FrameLeases)
	if len(leases.Leases) != 1 || !leases.Leases[0].LeaseExpiry.After(tasks[0].LeaseExpiry) || len(leases.Cancels) != 0 {
		t.Errorf("leases %+v; want the lease extended past %v", leases, tasks[0].LeaseExpiry)
	}
	unknown := client.StreamAttempt{RunID: "s-1", Key: "9", Attempt: 1}
	send(t, s, client.StreamFrame{Type: client.FrameResults, Results: []client.StreamResult{
		{StreamAttempt: at, Result: json.RawMessage("0")}, {StreamAttempt: unknown, Result: json.RawMessage("5")}}})
	acks := recv(t, s, client.FrameAcks).Acks
	if len(acks) != 2 || acks[0].Status != client.AckCompleted || acks[1].Status != client.AckNotFound {
		t.Errorf("acks %+v; want completed, then not_found", acks)
	}
	r, outs := f.await(t, "s-1")
	if r.Status != store.RunCompleted || string(r.Result) != "0" || len(outs) != 1 {
		t.Fatalf("run s-1: %s %s, outcomes %+v; want completed with 0", r.Status, r.Result, outs)
	}
	send(t, s, client.StreamFrame{Type: client.FrameResults, Results: []client.StreamResult{{StreamAttempt: at, Result: json.RawMessage("7")}}})
	if acks := recv(t, s, client.FrameAcks).Acks; len(acks) != 1 || acks[0].Status != client.AckConflict {
		t.Errorf("the result sent again: acks %+v; want conflict", acks)
	}
	send(t, s, client.StreamFrame{Type: client.FrameHeartbeats, Heartbeats: []client.StreamHeartbeat{{StreamAttempt: at}}})
	if c := recv(t, s, client.FrameLeases).Cancels; len(c) != 1 || c[0].StreamAttempt != at {
		t.Errorf("heartbeat of an ended attempt: cancels %+v; want it canceled", c)
	}
	if _, outs2 := f.await(t, "s-1"); len(outs2) != 1 || string(outs2[0].Value) != "0" {
		t.Errorf("outcomes after the late result: %+v; want the first result kept", outs2)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Errorf("after CloseSend: %v; want the end of the stream", err)
	}
}

// TestTaskStreamBroken: a stream cut while it holds a task leaves the
// task to its lease: it expires, and attempt 2 is pushed to another
// stream, which ends the call.
func TestTaskStreamBroken(t *testing.T) {
	f := newStreamFixture(t, 300*time.Millisecond)
	a := f.open(t, "a", 1)
	f.start(t, "b-1", `{"n":1,"name":"echo","attempts":3}`)
	if ts := recv(t, a, client.FrameTasks).Tasks; len(ts) != 1 || ts[0].Attempt != 1 {
		t.Fatalf("stream a got %+v; want attempt 1", ts)
	}
	a.Close()
	b := f.open(t, "b", 1)
	ts := recv(t, b, client.FrameTasks).Tasks
	if len(ts) != 1 || ts[0].RunID != "b-1" || ts[0].Attempt != 2 || !strings.Contains(ts[0].LastError, "timed out") {
		t.Fatalf("stream b got %+v; want attempt 2 after a timeout", ts)
	}
	send(t, b, client.StreamFrame{Type: client.FrameResults, Results: []client.StreamResult{{StreamAttempt: client.StreamAttempt{RunID: "b-1", Key: "1", Attempt: 2}, Result: json.RawMessage("0")}}})
	recv(t, b, client.FrameAcks)
	if r, outs := f.await(t, "b-1"); r.Status != store.RunCompleted || len(outs) != 1 || outs[0].Attempts != 2 {
		t.Errorf("run b-1: %s, outcomes %+v; want completed after 2 attempts", r.Status, outs)
	}
}

// TestTaskStreamBadFrames: a bad hello is an ordinary 400; a frame that
// is not JSON, of an unknown type or breaking a rule ends the stream with
// an error frame that says which frame and why.
func TestTaskStreamBadFrames(t *testing.T) {
	f := newStreamFixture(t, time.Second)
	for _, c := range []struct{ what, body, status, says string }{
		{"no hello", `{"type":"credit","credit":1}`, "400", `opens with a \"hello\" frame`},
		{"hello without names", `{"type":"hello","worker":"x"}`, "400", `needs \"worker\" and \"names\"`},
		{"hello not JSON", `hello`, "400", "frame 1 is not a JSON object"},
		{"not JSON", `{"type":"hello","worker":"x","names":["echo"]}` + "\n{nope", "200", `"bad_request","message":"frame 2 is not a JSON object`},
		{"unknown type", `{"type":"hello","worker":"x","names":["echo"]}` + "\n" + `{"type":"claim"}`, "200", `frame 2: unknown frame type \"claim\"`},
		{"unknown field", `{"type":"hello","worker":"x","names":["echo"]}` + "\n" + `{"type":"credit","credit":1,"more":2}`, "200", `frame 2 is not a JSON object of the worker stream: json: unknown field \"more\"`},
		{"credit 0", `{"type":"hello","worker":"x","names":["echo"]}` + "\n\n" + `{"type":"credit","credit":0}`, "200", "frame 2: a credit frame grants 1 to"},
		{"bad activity name", `{"type":"hello","worker":"x","names":[""],"credit":1}`, "200", `frame 1: claim tasks`},
	} {
		req, _ := http.NewRequest("POST", f.srv.URL+"/v1/tasks/stream", strings.NewReader(c.body+"\n"))
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			got.WriteString(sc.Text() + "\n")
		}
		resp.Body.Close()
		if status := resp.Status[:3]; status != c.status || !strings.Contains(got.String(), c.says) {
			t.Errorf("%s: %s %s; want %s saying %q", c.what, status, got.String(), c.status, c.says)
		}
		if c.status == "200" && !strings.HasPrefix(got.String(), `{"type":"ready"`) {
			t.Errorf("%s: %s; want a ready frame first", c.what, got.String())
		}
	}
}

// TestWorkerFallsBackToJSONCalls: package worker, given a server that
// answers the stream with 404 (an older one), serves tasks with the JSON
// calls; given the stream, it uses it.
func TestWorkerFallsBackToJSONCalls(t *testing.T) {
	f := newStreamFixture(t, 2*time.Second)
	var mu sync.Mutex
	paths := map[string]int{}
	api := New(f.h, Options{})
	for i, hide := range []bool{true, false} {
		old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			paths[r.URL.Path]++
			mu.Unlock()
			if hide && r.URL.Path == "/v1/tasks/stream" {
				http.NotFound(w, r)
				return
			}
			api.ServeHTTP(w, r)
		}))
		wk, err := worker.New(worker.Options{Server: old.URL, Identity: fmt.Sprintf("w%d", i), Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		wk.Register("echo", func(_ context.Context, in []byte) ([]byte, error) { return in, nil })
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- wk.Run(ctx) }()
		id := fmt.Sprintf("fb-%d", i)
		f.start(t, id, `{"n":3,"name":"echo"}`)
		if r, _ := f.await(t, id); r.Status != store.RunCompleted || string(r.Result) != "3" {
			t.Errorf("run %s: %s %s; want completed with 3", id, r.Status, r.Result)
		}
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
		old.Close()
		mu.Lock()
		if claims := paths["/v1/tasks/claim"]; hide != (claims > 0) || paths["/v1/tasks/stream"] == 0 {
			t.Errorf("stream hidden %v: requests %v; want the JSON claims only without the stream", hide, paths)
		}
		clear(paths)
		mu.Unlock()
	}
}
