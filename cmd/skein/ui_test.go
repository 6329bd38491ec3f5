package main

// The web UI, /metrics and the logs of a real `skein serve`: the UI is
// driven in headless Chromium (Debian's package, which .ci/run installs)
// through chromedp; the metrics are scraped and parsed; the JSON logs are
// read back line by line.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// findChromium returns the path of a Chromium binary, or "".
// needChromium returns the path of Chromium for a browser test, or skips
// the test (group "browser") when there is none, unless
// $SKEIN_REQUIRE_BROWSER is set, which makes it fail.
func needChromium(t *testing.T) string {
	t.Helper()
	chrome := findChromium()
	if chrome == "" && os.Getenv("SKEIN_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium found (chromium, chromium-browser or /usr/bin/chromium) and $SKEIN_REQUIRE_BROWSER is set")
	}
	if chrome == "" {
		testgroup.Skip(t, "browser", "apt-get install chromium chromium-driver (as .ci/run does)", "no chromium found (chromium, chromium-browser or /usr/bin/chromium)")
	}
	return chrome
}

// browserSteps starts headless Chromium for the test (stopped at its
// end) and returns step, which runs actions with a deadline of 15 s and
// fails the test with the page's main element if they fail.
func browserSteps(t *testing.T, chrome string) func(what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	_, step := browserSession(t, chrome)
	return step
}

// browserSession is browserSteps with the browser's context too, to
// evaluate expressions on the page between steps.
func browserSession(t *testing.T, chrome string) (context.Context, func(what string, actions ...chromedp.Action[chromedp.Void])) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chrome), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancel() })
	// The first action starts the browser: on bctx, so that it outlives
	// each step's deadline.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium %s: %v", chrome, err)
	}
	return bctx, func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 15*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			html, _ := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("main")))
			t.Fatalf("%s: %v\npage:\n%s", what, err, html)
		}
	}
}

// findChromium returns the path of a Chromium binary, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/lib/chromium/chromium"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// artifactDir is where the test leaves its screenshots: $SKEIN_ARTIFACTS
// when set, else the test's artifact folder (kept by `go test -artifacts
// -outputdir DIR`, a temporary folder otherwise).
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("SKEIN_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.ArtifactDir()
}

// deployExample deploys an example workflow under its folder's name.
func deployExample(t *testing.T, s *skeinServer, token, pkg string) {
	t.Helper()
	wasm, err := os.ReadFile(wasmbuild.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	want(t, "deploy "+pkg, s.call(t, "POST", "/v1/modules?name="+filepath.Base(pkg), token, wasm), 201, "")
}

// TestUIBrowser opens the UI of a live server in headless Chromium: the
// token form, the runs list with a status filter and a search, the race
// run's lineage tree, a typed promise's settle box refusing a value of
// another shape, then settling the promise until the run completes, an
// op's detail panel and the journal's download, a run canceled from its
// page after a confirmation, the runs list's columns, filters and sorting
// (ui_runpage_test.go), the modules page.
func TestUIBrowser(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	const token = "ui-s3cret"
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--token", token, "--worker-id", "ui-worker")
	deployExample(t, s, token, "./examples/race")
	deployExample(t, s, token, "./examples/approval")
	for _, start := range []map[string]any{
		{"module": "race", "id": "race-1"},
		{"module": "approval", "id": "appr-1", "input": map[string]string{"request": "r1"}},
		{"module": "approval", "id": "appr-2", "input": map[string]string{"request": "r2"}},
	} {
		want(t, fmt.Sprint("start ", start["id"]), s.call(t, "POST", "/v1/runs", token, start), 201, "")
	}
	s.awaitStatus(t, "race-1", token, "completed")
	s.awaitStatus(t, "appr-1", token, "suspended")
	s.awaitStatus(t, "appr-2", token, "suspended")

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chrome),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	// The page's console: exceptions and errors (but the network's: the
	// first API call is refused with 401 until the token is typed).
	var cmu sync.Mutex
	var problems []string
	msgs := chromedp.Console(bctx)
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium %s: %v", chrome, err)
	}
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") {
				cmu.Lock()
				problems = append(problems, fmt.Sprintf("%s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1))
				cmu.Unlock()
			}
		}
	}()

	grantClipboard(t, bctx)
	dir := artifactDir(t)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Error(err)
			return
		}
		t.Logf("screenshot: %s", p)
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 15*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			shot("failed.png")
			html, _ := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("main")))
			t.Fatalf("%s: %v\npage:\n%s", what, err, html)
		}
	}
	eval := func(what, expr string) []string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	rows := `Array.from(document.querySelectorAll('tr.run-row')).map(r => r.dataset.run)`

	// The token form, then the runs list.
	step("open the UI and type the token",
		chromedp.Navigate(s.url+"/#/runs"),
		chromedp.WaitVisible(chromedp.CSS("#token-input")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), token),
		chromedp.Click(chromedp.CSS("#token-save")),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="race-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="appr-2"]`)))
	if got := eval("runs", rows); !slices.Equal(got, []string{"appr-1", "appr-2", "race-1"}) {
		t.Errorf("runs list %q", got)
	}
	mods := eval("modules in the runs list", `Array.from(document.querySelectorAll('tr.run-row td.module')).map(c => c.textContent)`)
	if len(mods) != 3 || !strings.HasPrefix(mods[0], "approval · ") || !strings.HasPrefix(mods[2], "race · ") {
		t.Errorf("the runs list shows the modules %q; want each by name and hash", mods)
	}
	shot("runs.png")
	step("filter the completed runs",
		chromedp.Click(chromedp.CSS(`button.filter[data-status="completed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.filter.active[data-status="completed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="race-1"]`)))
	if got := eval("completed runs", rows); !slices.Equal(got, []string{"race-1"}) {
		t.Errorf("completed runs %q", got)
	}
	step("search runs by id",
		chromedp.Click(chromedp.CSS(`button.filter[data-status="all"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.filter.active[data-status="all"]`)),
		chromedp.SendKeys(chromedp.CSS("#run-search"), "appr"),
		chromedp.Click(chromedp.CSS(`#run-search-form button[type="submit"]`)),
		void(chromedp.Poll[bool](`location.hash.includes('q=appr') && document.querySelectorAll('tr.run-row').length === 2`, chromedp.WithPollingTimeout(10*time.Second))))
	if got := eval("runs matching appr", rows); !slices.Equal(got, []string{"appr-1", "appr-2"}) {
		t.Errorf("runs matching appr %q", got)
	}

	// The race run's lineage tree.
	step("open the race run",
		chromedp.Navigate(s.url+"/#/runs"),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="race-1"] a.run-link`)),
		chromedp.Click(chromedp.CSS(`tr.run-row[data-run="race-1"] a.run-link`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="completed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#tree tr.op[data-key="t3.2"]`)))
	keys := eval("tree keys", `Array.from(document.querySelectorAll('#tree tr.op')).map(r => r.dataset.key)`)
	if !slices.Equal(keys, []string{"1", "t2.1", "t2.2", "t3.1", "t3.2"}) {
		t.Errorf("the race's tree has ops %q; want 1, t2.1, t2.2, t3.1, t3.2 in lineage order", keys)
	}
	tree := eval("tree rows", `Array.from(document.querySelectorAll('#tree tbody tr')).map(r =>
		[r.dataset.key, r.dataset.kind, r.dataset.depth, r.cells[1].textContent].join(' '))`)
	wantTree := []string{"1 sleep 0 sleep", "t2 task 0 ", "t2.1 step 1 slow", "t2.2 step 1 mark", "t3 task 0 ", "t3.1 step 1 fast", "t3.2 step 1 mark"}
	if !slices.Equal(tree, wantTree) {
		t.Errorf("tree rows (key kind depth function):\n%q\nwant\n%q", tree, wantTree)
	}
	if v := text(`#tree tr.op[data-key="t2.2"] td.value`); v != `"s2:slow-result"` {
		t.Errorf("value of t2.2 %q", v)
	}
	if v := text("#run-result"); !strings.Contains(v, "s2:slow-result") || !strings.Contains(v, "f2:fast-result") {
		t.Errorf("race result %q", v)
	}
	if n := eval("cancel button", `Array.from(document.querySelectorAll('#cancel-run')).map(b => b.id)`); len(n) != 0 {
		t.Errorf("a completed run offers a cancel button")
	}
	// Its leases: every claim by this server's worker, released; no
	// worker holds the ended run.
	step("the race's leases",
		chromedp.WaitVisible(chromedp.CSS(`#leases tr.lease-row[data-token="1"][data-worker="ui-worker"][data-state="released"]`)))
	leases := eval("leases", `Array.from(document.querySelectorAll('#leases tr.lease-row')).map(r => r.dataset.worker + ' ' + r.dataset.state)`)
	if len(leases) == 0 || slices.ContainsFunc(leases, func(l string) bool { return l != "ui-worker released" }) {
		t.Errorf("the race's leases %q; want every one by ui-worker, released", leases)
	}
	if n := eval("worker", `Array.from(document.querySelectorAll('#run-worker')).map(e => e.textContent)`); len(n) != 0 {
		t.Errorf("the ended race shows a worker %q", n)
	}
	checkRaceTimeline(t, bctx)
	if v := text("#run-module"); !strings.HasPrefix(v, "race · ") {
		t.Errorf("the race's module shows %q; want its name and hash", v)
	}
	shot("race.png")

	// Settle the approval's promise from its run page.
	step("settle the pending promise",
		chromedp.Navigate(s.url+"/#/run/appr-1"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="suspended"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.op[data-key="decision"][data-status="pending"] input.settle-value`)))
	checkSettleShape(t, bctx, s, token, step)
	step("type the value to settle the promise with",
		chromedp.SendKeys(chromedp.CSS(`input.settle-value[data-key="decision"]`), `{"approved":true,"by":"ui"}`))
	// What it waits on: the promise by its full id, with a copy button
	// and the skein resolve line, and the deadline timer with its due time.
	step("copy the pending promise's full id",
		chromedp.WaitVisible(chromedp.CSS(`#waiting tr.wait-row[data-kind="promise"][data-id="appr-1.decision"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#waiting tr.wait-row[data-kind="timer"][data-key="deadline"]`)),
		chromedp.Click(chromedp.CSS(`#waiting tr.wait-row[data-kind="promise"] .wait-id + button.copy`)),
		chromedp.WaitVisible(chromedp.CSS(`#waiting button.copy[data-copied="appr-1.decision"]`)))
	if v := text(`#waiting tr.wait-row[data-kind="promise"] code.resolve-line`); v != "skein resolve appr-1.decision --value 'JSON'" {
		t.Errorf("the resolve line on the page: %q", v)
	}
	if v := text(`#waiting tr.wait-row[data-kind="timer"] td.time`); !strings.HasPrefix(v, "due 20") {
		t.Errorf("the deadline timer's due time on the page: %q", v)
	}
	if v := text(`#waiting tr.wait-row[data-kind="promise"] .wait-id`); v != "appr-1.decision" {
		t.Errorf("the pending promise's id on the page: %q, want the full id appr-1.decision", v)
	}
	checkClipboard(t, bctx, "appr-1.decision")
	checkPendingTimeline(t, bctx)
	shot("approval-pending.png")
	step("see the run complete",
		chromedp.Click(chromedp.CSS(`button.settle[data-key="decision"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="completed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.op[data-key="decision"][data-status="ok"]`)))
	if v := text("#run-result"); !strings.Contains(v, "ticket:r1 approved by ui") {
		t.Errorf("approval result in the page %q", v)
	}
	if v := text(`tr.op[data-key="decision"] td.value`); v != `{"approved":true,"by":"ui"}` {
		t.Errorf("the settled promise shows %q", v)
	}
	checkSettledTimeline(t, bctx)
	shot("approval.png")
	if r := s.getRun(t, "appr-1", token); r.Status != "completed" || string(r.Result) != `"ticket:r1 approved by ui"` {
		t.Errorf("appr-1 through the API: %s %s (%s)", r.Status, r.Result, r.Error)
	}

	// A step that failed twice before it succeeded: three attempts in its bar.
	deployExample(t, s, token, "./testdata/workflows/features")
	want(t, "start retry-1", s.call(t, "POST", "/v1/runs", token, map[string]any{"module": "features", "workflow": "retrystep", "id": "retry-1",
		"input": map[string]any{"fail": 2, "error": "flaky", "max": 5}}), 201, "")
	s.awaitStatus(t, "retry-1", token, "completed")
	step("open the retried step's run",
		chromedp.Navigate(s.url+"/#/run/retry-1"),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .tl-bar[data-key="1"] .tl-try[data-n="3"]`)))
	checkRetryTimeline(t, bctx)
	shot("retry.png")

	// The detail panel of an op, and the journal to download.
	startLongRuns(t, s, token)
	checkOpDetail(t, bctx, s, token, step)
	shot("op-detail.png")
	checkJournalDownload(t, bctx, s, token, step)

	// Cancel the other approval from its page.
	checkCancelConfirm(t, bctx, s, token, step)

	// The runs list's columns, filters and sorting.
	checkRunList(t, bctx, s, token, step, []string{"race-1", "appr-1", "appr-2", "retry-1", "long-1", "appr-3"})
	shot("runs-sorted.png")

	// The modules page.
	step("modules",
		chromedp.Navigate(s.url+"/#/modules"),
		chromedp.WaitVisible(chromedp.CSS(`tr.module-row[data-name="race"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.module-row[data-name="approval"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#start-form`)))
	shot("modules.png")

	cmu.Lock()
	defer cmu.Unlock()
	for _, p := range problems {
		t.Errorf("browser console: %s", p)
	}
}

// void drops the value of an action.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// scrape GETs /metrics with the token.
func scrape(t *testing.T, s *skeinServer, token string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

var metricLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (-?[0-9.eE+-]+|\+Inf|NaN)$`)

// TestServeMetricsAndLogs scrapes /metrics of a live server after a run
// and parses it, and reads the server's JSON log lines: every line about
// the run names it.
func TestServeMetricsAndLogs(t *testing.T) {
	t.Parallel()
	const token = "m-s3cret"
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--token", token, "--log-format", "json", "--log-level", "debug")
	deployExample(t, s, token, "./examples/race")
	want(t, "start", s.call(t, "POST", "/v1/runs", token, map[string]any{"module": "race", "id": "race-m"}), 201, "")
	s.awaitStatus(t, "race-m", token, "completed")

	if code, _, _ := scrape(t, s, ""); code != 401 {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	code, ct, body := scrape(t, s, token)
	if code != 200 || !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: %d %q\n%s", code, ct, body)
	}
	typed := map[string]string{}
	values := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			typed[name] = typ
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		m := metricLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("/metrics line %q is not a sample", line)
		}
		fam := m[1]
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(fam, suf); ok && typed[b] == "histogram" {
				fam = b
			}
		}
		if typed[fam] == "" {
			t.Errorf("/metrics: sample %s without a TYPE line before it", m[1])
		}
		values[m[1]+m[2]] = m[3]
	}
	for series, want := range map[string]string{
		`skein_runs{namespace="default",status="completed"}`:             "1",
		`skein_runs_ended_total{namespace="default",status="completed"}`: "1",
		`skein_live_instances`: "0",
		`skein_activation_seconds_bucket{namespace="default",le="+Inf"}`: values[`skein_activation_seconds_count{namespace="default"}`],
	} {
		if values[series] != want {
			t.Errorf("/metrics: %s = %q, want %q", series, values[series], want)
		}
	}
	for _, name := range []string{`skein_ops_recorded_total{namespace="default"}`, `skein_executions_total{namespace="default"}`, "skein_store_commit_seconds_count", `skein_activation_seconds_count{namespace="default"}`} {
		if v := values[name]; v == "" || v == "0" {
			t.Errorf("/metrics: %s = %q, want > 0", name, v)
		}
	}
	s.stop(t)

	// Every line is a JSON object; the lines about the run carry its id.
	about := map[string]bool{}
	for line := range strings.Lines(s.stderr.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line is not JSON: %q", line)
			continue
		}
		if rec["time"] == nil || rec["level"] == nil || rec["msg"] == nil {
			t.Errorf("log line without time, level or msg: %q", line)
		}
		if rec["run"] == "race-m" {
			about[rec["msg"].(string)] = true
		}
	}
	for _, msg := range []string{"execution started", "run ended"} {
		if !about[msg] {
			t.Errorf("no %q log line with run=race-m in\n%s", msg, s.stderr.String())
		}
	}
	r := skein(t, "", "serve", "--log-format", "xml")
	wantExit(t, r, exitUsage, "--log-format")
}
