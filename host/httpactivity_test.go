package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

const httpcallPkg = "./testdata/workflows/httpcall"

// fakeResolver gives names addresses without a DNS server: the HTTP
// activity's tests never send traffic off the machine.
type fakeResolver map[string]string

func (f fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	a, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []net.IPAddr{{IP: net.ParseIP(a)}}, nil
}

// httpServer is a loopback server that counts its requests by path.
type httpServer struct {
	*httptest.Server
	addr string // 127.0.0.1:port
	hits map[string]*atomic.Int64
}

func newHTTPServer(t *testing.T, handlers map[string]http.HandlerFunc) *httpServer {
	t.Helper()
	s := &httpServer{hits: map[string]*atomic.Int64{}}
	mux := http.NewServeMux()
	for path, h := range handlers {
		n := &atomic.Int64{}
		s.hits[path] = n
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { n.Add(1); h(w, r) })
	}
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	s.addr = strings.TrimPrefix(s.URL, "http://")
	return s
}

type fetchOut struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	XTest  string `json:"x_test"`
	Err    string `json:"err"`
}

// fetch runs the httpcall workflow to its end and returns its result.
func fetch(t *testing.T, h *testHost, m store.Module, req map[string]any, max int) (store.Run, fetchOut) {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"req": req, "max": max})
	r := startRun(t, h, m, "fetch", string(in), 0)
	r = drive(t, h, r.ID, DriveOptions{WaitTimers: true})
	if r.Status != store.RunCompleted {
		t.Fatalf("fetch %s: run %s: %s", in, r.Status, r.Error)
	}
	var out fetchOut
	mustJSON(t, r.Result, &out)
	return r, out
}

// TestHTTPActivity: the built-in HTTP activity reaches an allowed host,
// and a denied host, a redirect to a denied host, a metadata address, an
// oversized response and a timeout each fail the op with the error text
// docs/activities.md gives; denials and the size limit are not retried,
// a timeout is, by the call's policy.
func TestHTTPActivity(t *testing.T) {
	other := newHTTPServer(t, map[string]http.HandlerFunc{"/": func(w http.ResponseWriter, r *http.Request) {}})
	srv := newHTTPServer(t, map[string]http.HandlerFunc{
		"/teapot": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Test", r.Method+" "+r.Header.Get("X-Token"))
			w.WriteHeader(http.StatusTeapot)
			fmt.Fprintf(w, "short and stout")
		},
		"/redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		},
		"/big": func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 4096)) },
		"/slow": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		},
	})
	cfg := Config{HTTPAllow: []string{srv.addr, "metadata.test"}, HTTPMaxResponseBytes: 1024, HTTPResolver: fakeResolver{"metadata.test": "169.254.169.254"}}
	h := newTestHost(t, cfg)
	m := h.deploy(t, httpcallPkg)
	// The timeout's own host: a short HTTPTimeout on a loaded machine
	// could also stop the requests that should succeed.
	cfg.HTTPTimeout = 200 * time.Millisecond
	ht := newTestHost(t, cfg)
	mt := ht.deploy(t, httpcallPkg)

	r, out := fetch(t, h, m, map[string]any{"method": "POST", "url": srv.URL + "/teapot", "header": map[string]string{"X-Token": "t1"}}, 0)
	if out != (fetchOut{Status: http.StatusTeapot, Body: "short and stout", XTest: "POST t1"}) {
		t.Errorf("allowed host: got %+v", out)
	}
	if o := outcomeAt(t, h, r.ID, "1"); o.Kind != "call" || o.Function != activity.HTTPActivity || o.Status != store.OutcomeOK || !strings.Contains(string(o.Value), `"status":418`) {
		t.Errorf("allowed host: recorded %+v", o)
	}

	const allowList = "(Config.HTTPAllow; --allow-http)"
	for _, tc := range []struct {
		h         *testHost
		name, url string
		max       int
		want      string
		attempts  int
	}{
		{h, "denied host", other.URL + "/x", 3,
			"HTTP request to " + other.addr + " denied: the host is not in the egress allow list " + allowList, 1},
		{h, "redirect to a denied host", srv.URL + "/redirect", 3,
			"HTTP redirect from " + srv.URL + "/redirect to " + other.addr + " denied: the host is not in the egress allow list " + allowList, 1},
		{h, "metadata address by name", "http://metadata.test/latest/meta-data/", 3,
			"HTTP request to metadata.test:80 denied: it resolves to 169.254.169.254, a link-local address (such as a cloud metadata endpoint); name the address itself in the egress allow list " + allowList + " to allow it", 1},
		{h, "metadata address", "http://169.254.169.254/latest/meta-data/", 3,
			"HTTP request to 169.254.169.254:80 denied: the host is not in the egress allow list " + allowList, 1},
		{h, "oversized response", srv.URL + "/big", 3,
			"the response of GET " + srv.URL + "/big is larger than 1024 bytes (limit Config.HTTPMaxResponseBytes = 1024 bytes (1 KiB); --http-max-response)", 1},
		{h, "bad URL", "http://%zz/", 3,
			`HTTP request: bad URL "http://%zz/": bad request: parse "http://%zz/": invalid URL escape "%zz"`, 1},
		{ht, "timeout", srv.URL + "/slow", 2,
			"GET " + srv.URL + "/slow did not complete within 200ms (limit Config.HTTPTimeout = 200ms; --http-timeout)", 2},
	} {
		tm := m
		if tc.h == ht {
			tm = mt
		}
		r, out := fetch(t, tc.h, tm, map[string]any{"url": tc.url}, tc.max)
		if out.Err != tc.want {
			t.Errorf("%s: got %+v\nwant error %q", tc.name, out, tc.want)
		}
		if o := outcomeAt(t, tc.h, r.ID, "1"); o.Status != store.OutcomeError || o.Attempts != tc.attempts {
			t.Errorf("%s: recorded %s after %d attempts, want an error after %d", tc.name, o.Status, o.Attempts, tc.attempts)
		}
	}
	if n := other.hits["/"].Load(); n != 0 {
		t.Errorf("the denied host got %d requests", n)
	}
	if n := srv.hits["/slow"].Load(); n != 2 {
		t.Errorf("the timed-out request was made %d times, want 2 (retried once by the call's policy)", n)
	}
}

// TestHTTPActivityReplay: a recorded response is never requested again:
// neither when the run resumes by replay nor when it is replayed.
func TestHTTPActivityReplay(t *testing.T) {
	srv := newHTTPServer(t, map[string]http.HandlerFunc{"/n": func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "once")
	}})
	h := newTestHost(t, Config{Evict: EvictAlways, HTTPAllow: []string{srv.addr}})
	m := h.deploy(t, httpcallPkg)
	ctx := context.Background()
	r := startRun(t, h, m, "fetch", `{"req":{"url":"`+srv.URL+`/n"},"wait":true}`, 0)
	if r = drive(t, h, r.ID, DriveOptions{}); r.Status != store.RunSuspended {
		t.Fatalf("run %s %s, want suspended on its promise", r.Status, r.Error)
	}
	if err := h.Resolve(ctx, r.ID+".go", json.RawMessage(`"go"`), ""); err != nil {
		t.Fatal(err)
	}
	if r = drive(t, h, r.ID, DriveOptions{}); r.Status != store.RunCompleted || string(r.Result) != `{"status":200,"body":"once"}` {
		t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
	}
	if rr, err := h.Replay(ctx, r.ID); err != nil || string(rr.Result) != string(r.Result) {
		t.Errorf("replay: %+v %v", rr, err)
	}
	h.c.mu.Lock()
	execs := h.c.execs[r.ID]
	h.c.mu.Unlock()
	if n := srv.hits["/n"].Load(); execs < 2 || n != 1 {
		t.Errorf("%d executions made %d requests, want 1", execs, n)
	}
}

// TestHTTPActivityDeniedByDefault: with no allow list every request fails,
// naming the host and the flag.
func TestHTTPActivityDeniedByDefault(t *testing.T) {
	srv := newHTTPServer(t, map[string]http.HandlerFunc{"/": func(w http.ResponseWriter, r *http.Request) {}})
	h := newTestHost(t, Config{})
	m := h.deploy(t, httpcallPkg)
	_, out := fetch(t, h, m, map[string]any{"url": srv.URL + "/"}, 0)
	want := "HTTP request to " + srv.addr + " denied: the host is not in the egress allow list (Config.HTTPAllow; --allow-http)"
	if out.Err != want || srv.hits["/"].Load() != 0 {
		t.Errorf("got %+v, %d requests; want error %q, none", out, srv.hits["/"].Load(), want)
	}
}

// TestHTTPActivityGrants: the HTTP activity is granted like any activity;
// a module without the grant cannot call it when grants are in force.
func TestHTTPActivityGrants(t *testing.T) {
	srv := newHTTPServer(t, map[string]http.HandlerFunc{"/": func(w http.ResponseWriter, r *http.Request) {}})
	h := newTestHost(t, Config{RequireGrants: true, HTTPAllow: []string{srv.addr}})
	m := h.deploy(t, httpcallPkg)
	r := startRun(t, h, m, "fetch", `{"req":{"url":"`+srv.URL+`/"}}`, 0)
	r = drive(t, h, r.ID, DriveOptions{})
	want := fmt.Sprintf(`activity "skein.http" is not granted to module httpcall (%s); it may call no activity`, shortHash(m.Hash))
	if r.Status != store.RunFailed || !strings.Contains(r.Error, want) {
		t.Errorf("without a grant: run %s %q, want failed with %q", r.Status, r.Error, want)
	}
	h.Grant("httpcall", activity.HTTPActivity)
	if _, out := fetch(t, h, m, map[string]any{"url": srv.URL + "/"}, 0); out.Status != http.StatusOK || out.Err != "" {
		t.Errorf("with the grant: got %+v", out)
	}
	if n := srv.hits["/"].Load(); n != 1 {
		t.Errorf("%d requests, want 1 (with the grant only)", n)
	}
}

// TestHTTPActivityReservedName: RegisterActivity refuses the reserved
// prefix, naming the rule.
func TestHTTPActivityReservedName(t *testing.T) {
	h := newTestHost(t, Config{})
	defer func() {
		want := `host: RegisterActivity("skein.http"): names that start with "skein." are reserved for the host's built-in activities`
		if v := recover(); fmt.Sprint(v) != want {
			t.Errorf("RegisterActivity(skein.http): recovered %v, want %q", v, want)
		}
	}()
	h.RegisterActivity(activity.HTTPActivity, func(context.Context, []byte) ([]byte, error) { return nil, nil })
}

// TestHTTPActivityBadAllowList: a malformed allow entry is refused by New.
func TestHTTPActivityBadAllowList(t *testing.T) {
	_, err := New(context.Background(), Config{Store: memory.New(), HTTPAllow: []string{"http://x.test"}})
	want := `host: Config.HTTPAllow: egress allow entry "http://x.test": want HOST or HOST:PORT (no scheme, path or user)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
