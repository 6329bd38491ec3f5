package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/worker"
)

// otlpSpan is a span as the receiver decoded it.
type otlpSpan struct {
	name, trace, id, parent string
	attrs                   map[string]string
	failed                  bool
	service                 string
}

// otlpReceiver is a collector on loopback: it decodes the OTLP/HTTP
// protobuf requests of an exporter and keeps their spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []otlpSpan
	url   string
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil || proto.Unmarshal(body, &req) != nil {
			t.Errorf("OTLP receiver: %s %s (%s): not an OTLP/HTTP protobuf export (%v)", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err)
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		rc.add(&req)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL
	return rc
}

func (rc *otlpReceiver) add(req *coltracepb.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				rc.spans = append(rc.spans, otlpSpan{name: s.Name, trace: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId),
					parent: hex.EncodeToString(s.ParentSpanId), attrs: attrMap(s.Attributes),
					failed: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR, service: service})
			}
		}
	}
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(v.BoolValue)
		}
	}
	return m
}

// await returns the spans once one named name for run has arrived (the
// exporter batches them for 50ms).
func (rc *otlpReceiver) await(t *testing.T, name, run string) []otlpSpan {
	t.Helper()
	deadline := time.Now().Add(cmdTimeout)
	for {
		rc.mu.Lock()
		spans := append([]otlpSpan(nil), rc.spans...)
		rc.mu.Unlock()
		for _, s := range spans {
			if s.name == name && s.attrs["skein.run_id"] == run {
				return spans
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q of run %s within %s; got %d spans", name, run, cmdTimeout, len(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runSpans are the spans of run: its run span, and its other spans by
// name and key.
func runSpans(t *testing.T, spans []otlpSpan, run string) (otlpSpan, map[string]otlpSpan) {
	t.Helper()
	var root otlpSpan
	byKey := map[string]otlpSpan{}
	for _, s := range spans {
		if s.attrs["skein.run_id"] != run {
			continue
		}
		if strings.HasPrefix(s.name, "run ") {
			root = s
			continue
		}
		k := s.name + " " + s.attrs["skein.key"] + " " + s.attrs["skein.attempt"]
		if strings.HasPrefix(s.name, "execution ") {
			k = s.name + " " + s.id
		}
		if _, dup := byKey[k]; dup {
			t.Errorf("run %s: two spans %q", run, k)
		}
		byKey[k] = s
	}
	return root, byKey
}

// TestTraceServe runs examples/order on `skein serve --otlp-endpoint`
// with the example's worker process and checks the spans a collector on
// loopback receives: each run's tree (run, executions, ops, attempts by
// the worker that served them), the run span under the traceparent the
// start request gave, the traceparent header of the workflow's
// notification (skein.HTTP), and, for a worker built on package worker,
// the attempt's traceparent in activity.Info.
func TestTraceServe(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./examples/order")
	rc := startOTLPReceiver(t)
	var mu sync.Mutex
	notified := map[string]string{} // order -> the notification's traceparent
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hook := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n struct{ Order string }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &n)
		mu.Lock()
		notified[n.Order] = r.Header.Get("traceparent")
		mu.Unlock()
	})}}
	hook.Start()
	defer hook.Close()
	addr := ln.Addr().String()
	s := startServer(t, filepath.Join(t.TempDir(), "t.db"), []string{"OTEL_BSP_SCHEDULE_DELAY=50"},
		"--allow-http", addr, "--otlp-endpoint", rc.url, "--worker-id", "serve-1")
	w := startWorker(t, buildTool(t, "./examples/order/worker"), "--server", s.url, "--id", "shop-1")
	wantExit(t, s.cli(t, nil, "deploy", wasm, "--name", "order"), 0)
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	order := func(id, card string) []byte {
		return []byte(`{"module":"order","id":"` + id + `","input":{"id":"` + id + `","item":"book","qty":1,"card":"` + card + `","notify":"http://` + addr + `/orders"}}`)
	}
	want(t, "start o-1", s.send(t, "POST", "/v1/runs", map[string]string{"traceparent": parent, "Content-Type": "application/json"}, order("o-1", "flaky")), 201, "")
	wantErr(t, "start with a bad traceparent", s.send(t, "POST", "/v1/runs", map[string]string{"traceparent": "01-xyz", "Content-Type": "application/json"}, order("o-x", "visa")),
		400, "bad_request", `traceparent "01-xyz"`)
	want(t, "start o-3", s.send(t, "POST", "/v1/runs", map[string]string{"Content-Type": "application/json"}, order("o-3", "declined")), 201, "")
	s.awaitStatus(t, "o-1", "", "completed")
	s.awaitStatus(t, "o-3", "", "failed")

	spans := rc.await(t, "run order", "o-1")
	root, got := runSpans(t, spans, "o-1")
	if root.trace != "0af7651916cd43dd8448eb211c80319c" || root.parent != "b7ad6b7169203331" || root.service != "skein" {
		t.Errorf("o-1's run span: trace %s, parent %s, service %q; want the start's traceparent's, service skein", root.trace, root.parent, root.service)
	}
	tree := []struct{ span, parent, worker string }{
		{"call reserve-stock 1 1", "", "serve-1"},
		{"call charge 2 2", "", "serve-1"},
		{"call skein.http 3 1", "", "serve-1"},
		{"attempt reserve-stock 1 1", "call reserve-stock 1 1", "shop-1"},
		{"attempt charge 2 1", "call charge 2 2", "shop-1"},
		{"attempt charge 2 2", "call charge 2 2", "shop-1"},
		{"attempt skein.http 3 1", "call skein.http 3 1", "serve-1"},
	}
	for _, e := range tree {
		sp, ok := got[e.span]
		parent := root
		if e.parent != "" {
			parent = got[e.parent]
		}
		if !ok || sp.parent != parent.id || sp.trace != root.trace || sp.attrs["skein.worker"] != e.worker {
			t.Errorf("span %q: %+v; want a child of %q by %s", e.span, sp, e.parent, e.worker)
		}
	}
	if !got["attempt charge 2 1"].failed || got["attempt charge 2 2"].failed {
		t.Errorf("charge's attempts: failed %v, %v; want the first only", got["attempt charge 2 1"].failed, got["attempt charge 2 2"].failed)
	}
	executions := 0
	for k, sp := range got {
		if strings.HasPrefix(k, "execution order") {
			executions++
			if sp.parent != root.id {
				t.Errorf("execution span %+v: not a child of the run span", sp)
			}
		}
	}
	if executions == 0 {
		t.Errorf("no execution span: %v", got)
	}
	mu.Lock()
	tp := notified["o-1"]
	mu.Unlock()
	if h := got["attempt skein.http 3 1"]; tp != "00-"+root.trace+"-"+h.id+"-01" {
		t.Errorf("the notification's traceparent %q; want the HTTP attempt's span %s", tp, h.id)
	}
	spans = rc.await(t, "run order", "o-3")
	root3, got3 := runSpans(t, spans, "o-3")
	if root3.parent != "" || !root3.failed || root3.trace == root.trace {
		t.Errorf("o-3's run span %+v: want a failed root of its own trace", root3)
	}
	if sp := got3["attempt release-stock 3 1"]; sp.parent != got3["call release-stock 3 1"].id || sp.parent == "" {
		t.Errorf("o-3's compensation: %v", got3)
	}

	// A webhook delivery's traceparent parents its run's span; a
	// malformed one is ignored, the delivery accepted.
	deployServerModule(t, s, nil)
	wantExit(t, s.cli(t, nil, "hook", "create", "tp", "--module", "srv", "--workflow", "echo"), 0)
	const hookParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	d1 := deliver(t, s, "tp", "", []byte(`{"a":1}`), "traceparent", hookParent)
	d2 := deliver(t, s, "tp", "", []byte(`{"a":2}`), "traceparent", "00-junk")
	want(t, "delivery with a traceparent", d1, 201, "")
	want(t, "delivery with a bad traceparent", d2, 201, "")
	for _, c := range []struct {
		reply         reply
		trace, parent string
	}{{d1, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"}, {d2, "", ""}} {
		id := decodeJSON[apiRun](t, "delivery", c.reply.body).ID
		s.awaitStatus(t, id, "", "completed")
		root, _ := runSpans(t, rc.await(t, "run echo", id), id)
		if root.parent != c.parent || c.trace != "" && root.trace != c.trace {
			t.Errorf("hook run %s's span: trace %s, parent %q; want trace %q, parent %q", id, root.trace, root.parent, c.trace, c.parent)
		}
	}

	// A worker built on package worker gets each attempt's traceparent.
	w.kill()
	seen := make(chan []string, 4)
	gw, err := worker.New(worker.Options{Server: s.url, Identity: "go-1", Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"reserve-stock", "charge"} {
		gw.Register(name, func(ctx context.Context, _ []byte) ([]byte, error) {
			i, _ := activity.InfoFrom(ctx)
			seen <- []string{i.Name, i.Traceparent}
			return []byte(`{"id":"x"}`), nil
		})
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- gw.Run(ctx) }()
	defer func() { stop(); <-ran }()
	want(t, "start o-4", s.send(t, "POST", "/v1/runs", map[string]string{"Content-Type": "application/json"}, order("o-4", "visa")), 201, "")
	s.awaitStatus(t, "o-4", "", "completed")
	spans = rc.await(t, "run order", "o-4")
	_, got4 := runSpans(t, spans, "o-4")
	for range 2 {
		v := <-seen
		a := got4["attempt "+v[0]+" "+map[string]string{"reserve-stock": "1", "charge": "2"}[v[0]]+" 1"]
		if a.id == "" || v[1] != "00-"+a.trace+"-"+a.id+"-01" || a.attrs["skein.worker"] != "go-1" {
			t.Errorf("%s: the activity saw traceparent %q; want its attempt's span %+v", v[0], v[1], a)
		}
	}
}
