package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/testcache"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
	"github.com/skeinrun/skein/worker"
)

// TestWorkerWithKey: package worker takes a worker key as it takes the
// token, and serves the activities the key is granted, on the stream.
func TestWorkerWithKey(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Config{Store: st, RemoteActivities: true, CacheDir: testcache.Shared(), CompileTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- h.Work(wctx, host.WorkOptions{Poll: 20 * time.Millisecond}) }()
	hs := httptest.NewServer(New(h, Options{Token: "tok", Stop: wctx}))
	t.Cleanup(hs.Close)
	srv := hs.URL
	secret, _, err := h.CreateKey(ctx, host.KeyOptions{Namespace: "default", Role: host.RoleWorker, Activities: []string{"echo"}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Options{Server: srv, Token: secret, Identity: "keyed", Concurrency: 2, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.Register("echo", func(ctx context.Context, in []byte) ([]byte, error) { return in, nil })
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("worker: %v", err)
		}
		<-worked
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
	r, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: "calls", Input: json.RawMessage(`{"n":3,"name":"echo","parallel":true}`), ID: "keyed-1"})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err = h.Await(actx, r.ID)
	if err != nil || r.Status != store.RunCompleted {
		t.Fatalf("run %s: %+v, %v; want completed by the keyed worker", r.ID, r, err)
	}
}

// TestWorkerKeyRefusesOtherNames: a worker whose key is not granted one
// of the activities it serves is refused (403 on the JSON calls, a
// forbidden frame on the stream): Run returns the refusal rather than
// claiming.
func TestWorkerKeyRefusesOtherNames(t *testing.T) {
	ta := newTestAPI(t, Options{Token: "tok"})
	hs := httptest.NewServer(ta.h)
	t.Cleanup(hs.Close)
	secret := ta.mint(host.KeyOptions{Namespace: "default", Role: host.RoleWorker, Activities: []string{"echo"}})
	for _, jsonCalls := range []bool{true, false} {
		w, err := worker.New(worker.Options{Server: hs.URL, Token: secret, Identity: "greedy", Wait: time.Second, JSONCalls: jsonCalls})
		if err != nil {
			t.Fatal(err)
		}
		w.Register("echo", func(ctx context.Context, in []byte) ([]byte, error) { return in, nil })
		w.Register("refund", func(ctx context.Context, in []byte) ([]byte, error) { return in, nil })
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		err = w.Run(ctx)
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), `not "refund"`) {
			t.Errorf("Run (JSON calls %v) of a worker serving an activity its key is not granted: %v; want the refusal", jsonCalls, err)
		}
		cancel()
	}
}
