package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// promFamily is one metric family of a Prometheus text exposition.
type promFamily struct {
	help, typ string
	samples   map[string]float64 // series (name and labels as printed) -> value
}

var (
	promName   = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	promSample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*)?\})? (\S+)$`)
)

// promT is what parseProm needs of a *testing.T.
type promT interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// failT records failures; Fatalf ends its goroutine.
type failT struct{ failed bool }

func (f *failT) Helper()               {}
func (f *failT) Errorf(string, ...any) { f.failed = true }
func (f *failT) Fatalf(string, ...any) { f.failed = true; runtime.Goexit() }

// parseProm parses the Prometheus text format (version 0.0.4) strictly:
// every sample belongs to a family announced by HELP and TYPE lines before
// it, a family is announced once, values are numbers, and a histogram has
// cumulative buckets ending in +Inf that equals its _count.
func parseProm(t promT, text string) map[string]*promFamily {
	t.Helper()
	fams := map[string]*promFamily{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "":
			t.Errorf("metrics line %d: empty", n)
		case strings.HasPrefix(line, "# HELP "), strings.HasPrefix(line, "# TYPE "):
			f := strings.SplitN(line[7:], " ", 2)
			if len(f) != 2 || !promName.MatchString(f[0]) || f[1] == "" {
				t.Fatalf("metrics line %d: bad comment %q", n, line)
			}
			fam := fams[f[0]]
			if fam == nil {
				fam = &promFamily{samples: map[string]float64{}}
				fams[f[0]] = fam
			}
			if strings.HasPrefix(line, "# HELP ") {
				if fam.help != "" {
					t.Errorf("metrics line %d: second HELP for %s", n, f[0])
				}
				fam.help = f[1]
				continue
			}
			if fam.typ != "" {
				t.Errorf("metrics line %d: second TYPE for %s", n, f[0])
			}
			if !slices.Contains([]string{"counter", "gauge", "histogram", "summary", "untyped"}, f[1]) {
				t.Errorf("metrics line %d: type %q", n, f[1])
			}
			fam.typ = f[1]
		case strings.HasPrefix(line, "#"):
		default:
			m := promSample.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("metrics line %d: not a sample: %q", n, line)
			}
			v, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				t.Fatalf("metrics line %d: value %q: %v", n, m[3], err)
			}
			name := m[1]
			fam := fams[name]
			if fam == nil {
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(name, suf); ok && fams[base] != nil && fams[base].typ == "histogram" {
						fam = fams[base]
					}
				}
			}
			if fam == nil || fam.typ == "" || fam.help == "" {
				t.Fatalf("metrics line %d: sample %s before its HELP and TYPE", n, name)
			}
			series := m[1] + m[2]
			if _, dup := fam.samples[series]; dup {
				t.Errorf("metrics line %d: series %s twice", n, series)
			}
			fam.samples[series] = v
		}
	}
	for name, fam := range fams {
		if len(fam.samples) == 0 {
			t.Errorf("family %s has no sample", name)
		}
		if fam.typ == "counter" && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s does not end in _total", name)
		}
		if fam.typ != "histogram" {
			continue
		}
		// One histogram per set of labels besides le (a labeled
		// histogram's series carry them before le).
		for labels, les := range histogramBuckets(t, name, fam) {
			prev, last := -1.0, ""
			for _, b := range les {
				if b.count < prev {
					t.Errorf("histogram %s{%s}: bucket le=%s count %v below the one before", name, labels, b.le, b.count)
				}
				prev, last = b.count, b.le
			}
			if last != "+Inf" {
				t.Errorf("histogram %s{%s}: last bucket le=%q, want +Inf", name, labels, last)
			}
			sel := ""
			if labels != "" {
				sel = "{" + labels + "}"
			}
			if c, ok := fam.samples[name+"_count"+sel]; !ok || c != prev {
				t.Errorf("histogram %s%s: _count %v, +Inf bucket %v", name, sel, c, prev)
			}
			if _, ok := fam.samples[name+"_sum"+sel]; !ok {
				t.Errorf("histogram %s%s: no _sum", name, sel)
			}
		}
		if len(fam.samples) > 0 && len(histogramBuckets(t, name, fam)) == 0 {
			t.Errorf("histogram %s: no buckets", name)
		}
	}
	return fams
}

type bucket struct {
	le    string
	bound float64
	count float64
}

// histogramBuckets returns the buckets of a histogram by bound, for each
// set of its labels besides le (as printed, "" for none).
func histogramBuckets(t promT, name string, fam *promFamily) map[string][]bucket {
	t.Helper()
	bs := map[string][]bucket{}
	re := regexp.MustCompile(`^` + name + `_bucket\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",)*)le="([^"]+)"\}$`)
	for series, v := range fam.samples {
		m := re.FindStringSubmatch(series)
		if m == nil {
			continue
		}
		b, err := strconv.ParseFloat(m[2], 64) // "+Inf" parses as +Inf
		if err != nil {
			t.Errorf("histogram %s: le %q", name, m[2])
		}
		labels := strings.TrimSuffix(m[1], ",")
		bs[labels] = append(bs[labels], bucket{le: m[2], bound: b, count: v})
	}
	for _, l := range bs {
		slices.SortFunc(l, func(a, b bucket) int {
			switch {
			case a.bound < b.bound:
				return -1
			case a.bound > b.bound:
				return 1
			}
			return 0
		})
	}
	return bs
}

// get serves a GET with the token and returns status, content type, body.
func (ta *testAPI) get(path, token string) (int, string, string) {
	ta.t.Helper()
	req := newRequest("GET", path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	ta.h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Header().Get("Content-Type"), string(body)
}

// TestMetricsEndpoint scrapes /metrics after a run and parses it.
func TestMetricsEndpoint(t *testing.T) {
	ta := newTestAPI(t, Options{Token: "tok"})
	if code, _, _ := ta.get("/metrics", ""); code != 401 {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./examples/race"))
	if err != nil {
		t.Fatal(err)
	}
	auth := []string{"Authorization", "Bearer tok"}
	ta.want("deploy", ta.do("POST", "/v1/modules?name=race", wasm, auth...), 201, "")
	ta.want("start", ta.do("POST", "/v1/runs", `{"module":"race","id":"r1"}`, auth...), 201, "")
	ta.want("start", ta.do("POST", "/v1/runs", `{"module":"race","id":"r2"}`, auth...), 201, "")
	r, err := ta.hs.Drive(context.Background(), "r1", host.DriveOptions{WaitTimers: true})
	if err != nil || r.Status != "completed" {
		t.Fatalf("drive r1: %s %v", r.Status, err)
	}

	code, ct, body := ta.get("/metrics", "tok")
	if code != 200 || !strings.HasPrefix(ct, "text/plain; version=0.0.4") { // the library adds "; escaping=…"
		t.Fatalf("/metrics: %d %q\n%s", code, ct, body)
	}
	fams := parseProm(t, body)
	for name, typ := range map[string]string{
		"skein_runs": "gauge", "skein_runs_count_capped": "gauge", "skein_runs_ended_total": "counter",
		"skein_ops_recorded_total": "counter", "skein_executions_total": "counter", "skein_replays_total": "counter",
		"skein_evictions_total": "counter", "skein_live_instances": "gauge", "skein_active_runs": "gauge",
		"skein_activation_seconds": "histogram", "skein_store_commit_seconds": "histogram", "skein_tasks_total": "counter",
		"skein_op_latency_seconds": "histogram", "skein_queue_wait_seconds": "histogram",
	} {
		if f := fams[name]; f == nil || f.typ != typ {
			t.Errorf("family %s: %+v, want type %s", name, f, typ)
		}
	}
	val := func(fam, series string) float64 {
		f := fams[fam]
		if f == nil {
			return -1
		}
		v, ok := f.samples[series]
		if !ok {
			t.Errorf("no series %s", series)
		}
		return v
	}
	for series, want := range map[string]float64{
		`skein_runs{namespace="default",status="completed"}`:             1,
		`skein_runs{namespace="default",status="pending"}`:               1,
		`skein_runs{namespace="default",status="suspended"}`:             0,
		`skein_runs_ended_total{namespace="default",status="completed"}`: 1,
		`skein_live_instances`:                                           0,
	} {
		fam := series
		if i := strings.IndexByte(series, '{'); i > 0 {
			fam = series[:i]
		}
		if got := val(fam, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if got := val("skein_ops_recorded_total", `skein_ops_recorded_total{namespace="default"}`); got < 6 {
		t.Errorf("skein_ops_recorded_total = %v, want >= 6", got)
	}
	if got := val("skein_activation_seconds", `skein_activation_seconds_count{namespace="default"}`); got < 1 {
		t.Errorf("skein_activation_seconds_count = %v, want >= 1", got)
	}
	if got := val("skein_store_commit_seconds", "skein_store_commit_seconds_count"); got < 1 {
		t.Errorf("skein_store_commit_seconds_count = %v, want >= 1", got)
	}
	ta.want("POST /metrics", ta.do("POST", "/metrics", "", auth...), 405, CodeMethodNotAllowed)
}

func TestParseProm(t *testing.T) {
	ok := "# HELP a_total A.\n# TYPE a_total counter\na_total 3\n" +
		"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 2.5\nh_count 2\n"
	fams := parseProm(t, ok)
	if fams["a_total"].samples["a_total"] != 3 || fams["h"].samples[`h_bucket{le="+Inf"}`] != 2 {
		t.Errorf("parsed %+v", fams)
	}
	// The parser's failures, seen through a fake testing.T.
	for _, bad := range []string{
		"a_total 3\n", // no HELP/TYPE
		"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n", // not cumulative
		"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",                       // count != +Inf
		"# HELP g G.\n# TYPE g gauge\ng{x=1} 2\n",                                                              // unquoted label
	} {
		ft := &failT{}
		done := make(chan struct{})
		go func() { defer close(done); parseProm(ft, bad) }()
		<-done
		if !ft.failed {
			t.Errorf("parseProm accepted %q", bad)
		}
	}
}

// TestUIFiles: the UI's files are served without the token (they hold no
// data), with their types and a content security policy; the API's 404s
// and 405s are unchanged.
func TestUIFiles(t *testing.T) {
	ta := newTestAPI(t, Options{Token: "tok"})
	for path, want := range map[string]string{
		"/":               "text/html",
		"/ui/app.js":      "text/javascript",
		"/ui/timeline.js": "text/javascript",
		"/ui/runlist.js":  "text/javascript",
		"/ui/opdetail.js": "text/javascript",
		"/ui/settle.js":   "text/javascript",
		"/ui/shape.js":    "text/javascript",
		"/ui/style.css":   "text/css",
	} {
		code, ct, body := ta.get(path, "")
		if code != 200 || !strings.HasPrefix(ct, want) || body == "" {
			t.Errorf("GET %s: %d %q (%d bytes), want 200 %s", path, code, ct, len(body), want)
		}
	}
	_, _, page := ta.get("/", "")
	for _, w := range []string{`src="/ui/app.js"`, `src="/ui/timeline.js"`, `src="/ui/runlist.js"`, `src="/ui/opdetail.js"`,
		`src="/ui/settle.js"`, `src="/ui/shape.js"`, `href="/ui/style.css"`, `id="main"`} {
		if !strings.Contains(page, w) {
			t.Errorf("index.html lacks %s", w)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Errorf("index.html loads something from elsewhere:\n%s", page)
	}
	req := newRequest("GET", "/", nil)
	rec := httptest.NewRecorder()
	ta.h.ServeHTTP(rec, req)
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	if code, _, _ := ta.get("/ui/nope.js", ""); code != 404 {
		t.Errorf("GET /ui/nope.js: %d, want 404", code)
	}
	if code, _, _ := ta.get("/ui/", ""); code != 404 {
		t.Errorf("GET /ui/ (a listing): %d, want 404", code)
	}
	// The API stays behind the token, and its catch-all still answers JSON.
	ta.want("API without token", ta.do("GET", "/v1/runs", nil), 401, CodeUnauthorized)
	auth := []string{"Authorization", "Bearer tok"}
	ta.want("unknown /v1 path", ta.do("GET", "/v1/nothing", nil, auth...), 404, CodeNotFound)
	ta.want("unknown path", ta.do("GET", "/nothing", nil, auth...), 404, CodeNotFound)
	ta.want("POST /", ta.do("POST", "/", "", auth...), 405, CodeMethodNotAllowed)
}

// TestRunOps: GET /v1/runs/{id}/ops holds every record with its kind and
// times, for the UI's tree.
func TestRunOps(t *testing.T) {
	ta := newTestAPI(t, Options{})
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./examples/approval"))
	if err != nil {
		t.Fatal(err)
	}
	ta.want("deploy", ta.do("POST", "/v1/modules?name=approval", wasm), 201, "")
	ta.want("start", ta.do("POST", "/v1/runs", `{"module":"approval","id":"a1","input":{"request":"x"}}`), 201, "")
	if r, err := ta.hs.Drive(context.Background(), "a1", host.DriveOptions{}); err != nil || r.Status != "suspended" {
		t.Fatalf("drive a1: %s %v", r.Status, err)
	}
	a := ta.do("GET", "/v1/runs/a1/ops", nil)
	ta.want("ops", a, 200, "")
	var v RunOps
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatal(err)
	}
	if v.Run.ID != "a1" || v.Run.Status != "suspended" {
		t.Errorf("run %+v", v.Run)
	}
	got := map[string]string{}
	for _, o := range v.Ops {
		got[o.Key] = fmt.Sprintf("%s/%s/%s", o.Kind, o.Function, o.Status)
		if o.Updated == "" {
			t.Errorf("op %s: no updated_at", o.Key)
		}
	}
	want := map[string]string{"1": "step/submit/ok", "decision": "promise/promise/pending", "deadline": "sleep/sleep/pending"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("op %s: %q, want %q (all: %v)", k, got[k], w, got)
		}
	}
	for _, o := range v.Ops {
		if o.Key == "deadline" && o.Deadline == nil {
			t.Errorf("the timer has no deadline")
		}
		if o.Key == "1" && string(o.Value) != `"ticket:x"` {
			t.Errorf("op 1 value %s", o.Value)
		}
		// The typed promise carries the shape of its value; no other op has one.
		if hasShape := bytes.Contains(o.Schema, []byte(`"approved"`)) && bytes.Contains(o.Schema, []byte(`"boolean"`)); hasShape != (o.Key == "decision") {
			t.Errorf("op %s schema %s; want the decision's shape on the promise only", o.Key, o.Schema)
		}
	}
	ta.want("ops of an unknown run", ta.do("GET", "/v1/runs/zz/ops", nil), 404, CodeNotFound)
}
