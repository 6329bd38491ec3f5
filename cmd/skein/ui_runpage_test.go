package main

// The run page's actions and details and the runs list's columns, filters
// and sorting, in the browser test (TestUIBrowser, ui_test.go): each
// check runs on the test's one server and browser.

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/store"
)

// uiStep runs browser actions, failing the test with the page if they fail.
type uiStep = func(what string, actions ...chromedp.Action[chromedp.Void])

// longError is the error text of the failing step of run long-1, and
// longRequest the request of run appr-3, whose submit step's value holds
// it: longer than the lineage tree's preview, so that only the detail
// panel shows them whole.
var (
	longError   = strings.Repeat("the payment gateway did not answer in time; ", 6) + "end"
	longRequest = "req-" + strings.Repeat("abcdefghij", 12)
)

// startLongRuns starts long-1 (a step that fails twice with longError,
// and with it the run) and appr-3 (an approval with longRequest, left
// waiting), in this order, after every other run of the test.
func startLongRuns(t *testing.T, s *skeinServer, token string) {
	t.Helper()
	want(t, "start long-1", s.call(t, "POST", "/v1/runs", token, map[string]any{"module": "features", "workflow": "retrystep", "id": "long-1",
		"input": map[string]any{"fail": 5, "error": longError, "max": 2}}), 201, "")
	s.awaitStatus(t, "long-1", token, "failed")
	want(t, "start appr-3", s.call(t, "POST", "/v1/runs", token, map[string]any{"module": "approval", "id": "appr-3",
		"input": map[string]string{"request": longRequest}}), 201, "")
	s.awaitStatus(t, "appr-3", token, "suspended")
}

func evalAs[T any](t *testing.T, bctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(bctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func textOf(t *testing.T, bctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// runOps is GET /v1/runs/{id}/ops through the API.
func runOps(t *testing.T, s *skeinServer, token, id string) client.RunOps {
	t.Helper()
	r := s.call(t, "GET", "/v1/runs/"+id+"/ops", token, nil)
	if r.status != 200 {
		t.Fatalf("GET ops of %s: %s", id, r)
	}
	var v client.RunOps
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func opOf(t *testing.T, v client.RunOps, key string) client.Op {
	t.Helper()
	for _, o := range v.Ops {
		if o.Key == key {
			return o
		}
	}
	t.Fatalf("run %s has no op %s", v.Run.ID, key)
	return client.Op{}
}

// checkSettleShape: the approval's typed promise: its settle box shows
// the expected shape, and refuses a value of another shape in the page,
// saying where and why, without sending it (the promise stays pending).
// The input is left empty for the right value.
func checkSettleShape(t *testing.T, bctx context.Context, s *skeinServer, token string, step uiStep) {
	t.Helper()
	box := `input.settle-value[data-key="decision"]`
	step("the settle box's expected shape", chromedp.WaitVisible(chromedp.CSS(`.settle-shape[data-key="decision"]`)))
	if got := textOf(t, bctx, `.settle-shape[data-key="decision"] code`); got != "{approved?: boolean, by?: string}" {
		t.Errorf("the settle box shows the shape %q; want {approved?: boolean, by?: string}", got)
	}
	step("settle with a value of another shape",
		chromedp.SendKeys(chromedp.CSS(box), `{"approved":"yes","by":"ui"}`),
		chromedp.Click(chromedp.CSS(`button.settle[data-key="decision"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.settle-error[data-key="decision"]`)))
	msg := textOf(t, bctx, `.settle-error[data-key="decision"]`)
	if !strings.HasPrefix(msg, "Not sent") || !strings.Contains(msg, `at $.approved: want boolean or null, got string "yes"`) {
		t.Errorf("the settle box's message for a wrong value: %q; want it not sent, naming $.approved and what it wants", msg)
	}
	if o := opOf(t, runOps(t, s, token, "appr-1"), "decision"); o.Status != "pending" || len(o.Schema) == 0 {
		t.Errorf("after the refused value the promise is %s (schema %s); want pending, with its schema", o.Status, o.Schema)
	}
	// As a person deletes the text (the page keeps what is typed across its refreshes).
	evalAs[bool](t, bctx, `(() => { const e = document.querySelector('`+box+`'); e.value = ''; e.dispatchEvent(new Event('input')); return true; })()`)
}

// checkOpDetail: the detail panel of the waiting approval appr-3's
// submit step holds its whole value, which the tree cuts; it closes with
// Esc and opens from the timeline too. That of long-1's failed step
// holds its whole error and both attempts with their times and errors,
// as the API gives them.
func checkOpDetail(t *testing.T, bctx context.Context, s *skeinServer, token string, step uiStep) {
	t.Helper()
	step("open the details of appr-3's submit step",
		chromedp.Navigate(s.url+"/#/run/appr-3"),
		chromedp.WaitVisible(chromedp.CSS(`#tree tr.op[data-key="1"] button.op-open`)),
		chromedp.Click(chromedp.CSS(`#tree tr.op[data-key="1"] button.op-open`)),
		chromedp.WaitVisible(chromedp.CSS(`#op-detail[data-key="1"] #op-detail-value`)))
	var value string
	if err := json.Unmarshal([]byte(textOf(t, bctx, "#op-detail-value")), &value); err != nil || value != "ticket:"+longRequest {
		t.Errorf("the detail panel's value %q (%v); want the whole %q", value, err, "ticket:"+longRequest)
	}
	if cell := textOf(t, bctx, `#tree tr.op[data-key="1"] td.value`); !strings.HasSuffix(cell, "…") {
		t.Errorf("the tree shows the long value whole (%q): the panel would not be needed", cell)
	}
	step("close the details with Esc, open them from the timeline",
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotPresent(chromedp.CSS("#op-detail")),
		chromedp.Click(chromedp.CSS(`#timeline .tl-op[data-key="1"] .tl-label`)),
		chromedp.WaitVisible(chromedp.CSS(`#op-detail[data-key="1"]`)),
		chromedp.Click(chromedp.CSS("#op-detail-close")),
		chromedp.WaitNotPresent(chromedp.CSS("#op-detail")))

	step("open the details of long-1's failed step",
		chromedp.Navigate(s.url+"/#/run/long-1"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="failed"]`)),
		chromedp.Click(chromedp.CSS(`#tree tr.op[data-key="1"] button.op-open`)),
		chromedp.WaitVisible(chromedp.CSS(`#op-detail-attempts tr.attempt-row[data-n="2"]`)))
	o := opOf(t, runOps(t, s, token, "long-1"), "1")
	if got := textOf(t, bctx, "#op-detail-error"); o.Error == nil || got != *o.Error || !strings.Contains(got, longError+" (attempt 2)") {
		t.Errorf("the detail panel's error %q; want the op's whole error %v", got, o.Error)
	}
	type attempt struct {
		N, Started, Ended, Error string
	}
	got := evalAs[[]attempt](t, bctx, `Array.from(document.querySelectorAll('#op-detail-attempts tr.attempt-row')).map(r => ({
		N: r.dataset.n, Started: r.cells[1].title, Ended: r.cells[2].title, Error: (r.querySelector('pre.attempt-error') || {}).textContent || ''}))`)
	if len(got) != 2 || len(o.Tries) != 2 {
		t.Fatalf("attempts in the panel %+v, in the API %+v; want 2", got, o.Tries)
	}
	for i, a := range got {
		tr := o.Tries[i]
		if a.N != string(rune('1'+i)) || a.Started != *tr.Started || a.Ended != *tr.Ended || tr.Error == nil || a.Error != *tr.Error ||
			!strings.HasPrefix(a.Error, longError) {
			t.Errorf("attempt %d in the panel %+v; want its times and whole error as the API gives them", i+1, a)
		}
	}
}

// checkJournalDownload: the journal link of appr-3 downloads the answer
// of GET /v1/runs/appr-3/ops as a JSON file.
func checkJournalDownload(t *testing.T, bctx context.Context, s *skeinServer, token string, step uiStep) {
	t.Helper()
	dir := t.TempDir()
	p := browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}
	if _, err := chromedp.CallBrowser(bctx, browser.SetDownloadBehavior, p); err != nil {
		t.Fatalf("allow downloads: %v", err)
	}
	step("download appr-3's journal",
		chromedp.Navigate(s.url+"/#/run/appr-3"),
		chromedp.WaitVisible(chromedp.CSS(`#download-journal[download="appr-3.journal.json"]`)),
		chromedp.Click(chromedp.CSS("#download-journal")))
	file := filepath.Join(dir, "appr-3.journal.json")
	var data []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && json.Valid(b) {
			data = b
			break
		}
	}
	if data == nil {
		t.Fatalf("no journal downloaded to %s", file)
	}
	api := s.call(t, "GET", "/v1/runs/appr-3/ops", token, nil)
	var got, wantDoc any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(api.body, &wantDoc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantDoc) {
		t.Errorf("the downloaded journal\n%s\nis not GET /v1/runs/appr-3/ops\n%s", data, api.body)
	}
}

// checkCancelConfirm: Cancel run asks first; Keep it running leaves the
// run as it was; Confirm with a reason cancels it.
func checkCancelConfirm(t *testing.T, bctx context.Context, s *skeinServer, token string, step uiStep) {
	t.Helper()
	step("ask to cancel appr-2, then keep it running",
		chromedp.Navigate(s.url+"/#/run/appr-2"),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-run`)),
		chromedp.Click(chromedp.CSS(`#cancel-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-question`)),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-confirm`)),
		chromedp.Click(chromedp.CSS(`#cancel-keep`)),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-run`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#cancel-confirm`)))
	if r := s.getRun(t, "appr-2", token); r.Status != "suspended" || r.CancelReason != "" {
		t.Errorf("after Keep it running appr-2 is %s (cancel reason %q); want suspended, no cancellation", r.Status, r.CancelReason)
	}
	step("cancel appr-2 with a reason",
		chromedp.Click(chromedp.CSS(`#cancel-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-reason`)),
		chromedp.SendKeys(chromedp.CSS("#cancel-reason"), "not needed"),
		chromedp.Click(chromedp.CSS(`#cancel-confirm`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="canceled"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-error`)))
	if v := textOf(t, bctx, "#run-error"); !strings.Contains(v, "not needed") {
		t.Errorf("the canceled run's error %q", v)
	}
}

// checkIdleBand: the suspended approval's idle period reads as normal:
// no word of a drop, and not in the warning's or the error's colour.
func checkIdleBand(t *testing.T, bctx context.Context) {
	t.Helper()
	type band struct{ Label, Text, Title, Color, Background string }
	b := evalAs[band](t, bctx, `(() => { const r = document.querySelector('#timeline-drops'), m = r.querySelector('.tl-drop-mark'), st = getComputedStyle(m);
		return {Label: r.querySelector('.tl-drop-label').textContent, Text: r.querySelector('.tl-drop-text').textContent, Title: m.title,
			Color: st.borderLeftColor, Background: st.backgroundColor}; })()`)
	if b.Label != "idle, instance released" || !strings.HasPrefix(b.Text, "1 idle period") || !strings.Contains(b.Title, "the run waited, so its instance was released") {
		t.Errorf("the idle band reads %+v; want \"idle, instance released\", \"1 idle period\" and why", b)
	}
	for _, s := range []string{b.Label, b.Text, b.Title} {
		if strings.Contains(strings.ToLower(s), "drop") {
			t.Errorf("the idle band says %q: a drop sounds like an alarm", s)
		}
	}
	for _, alarm := range []string{"161, 92, 0", "180, 35, 24"} { // --warn, --err
		if strings.Contains(b.Color, alarm) || strings.Contains(b.Background, alarm) {
			t.Errorf("the idle band is drawn in an alarm's colour: %+v", b)
		}
	}
}

// listRun is a row of the runs list.
type listRun struct {
	ID, Ended, Duration string
}

func listRows(t *testing.T, bctx context.Context) []listRun {
	t.Helper()
	return evalAs[[]listRun](t, bctx, `Array.from(document.querySelectorAll('tr.run-row')).map(r => ({
		ID: r.dataset.run, Ended: r.querySelector('td.ended').dataset.ended, Duration: r.querySelector('td.duration').dataset.durationMs}))`)
}

func listIDs(rows []listRun) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// awaitList waits until the runs list shows exactly ids, in this order.
func awaitList(t *testing.T, bctx context.Context, what string, ids []string) {
	t.Helper()
	j, _ := json.Marshal(ids)
	ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`JSON.stringify(Array.from(document.querySelectorAll('tr.run-row')).map(r => r.dataset.run)) === `+"`"+string(j)+"`",
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("%s: the runs list shows %q; want %q (%v)", what, listIDs(listRows(t, bctx)), ids, err)
	}
}

// setInput sets a filter's value as a person would and fires its change.
func setInput(t *testing.T, bctx context.Context, sel, valueExpr string) {
	t.Helper()
	evalAs[bool](t, bctx, `(() => { const e = document.querySelector('`+sel+`'); e.value = `+valueExpr+`; e.dispatchEvent(new Event('change')); return true; })()`)
}

// checkRunList: the ended and duration columns as the runs' times give
// them; the filters by workflow, module and creation time; sorting by
// each sortable header, both ways for the duration. ids are the test's
// runs in the order they were created.
func checkRunList(t *testing.T, bctx context.Context, s *skeinServer, token string, step uiStep, ids []string) {
	t.Helper()
	runs := map[string]apiRun{}
	for _, id := range ids {
		runs[id] = s.getRun(t, id, token)
	}
	sorted := slices.Sorted(slices.Values(ids))
	step("the runs list", chromedp.Navigate(s.url+"/#/runs"), chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="appr-3"]`)))
	awaitList(t, bctx, "every run", sorted)
	for _, row := range listRows(t, bctx) {
		r := runs[row.ID]
		if !store.RunStatus(r.Status).Terminal() {
			if row.Ended != "" || row.Duration != "" {
				t.Errorf("run %s (%s) shows ended %q after %q ms; want neither", r.ID, r.Status, row.Ended, row.Duration)
			}
			continue
		}
		c, u := parseTime(t, r.CreatedAt), parseTime(t, r.UpdatedAt)
		d, err := time.ParseDuration(row.Duration + "ms")
		if row.Ended != r.UpdatedAt || err != nil || (d-u.Sub(c)).Abs() > time.Millisecond {
			t.Errorf("run %s shows ended %q after %q ms; want %s after %s", r.ID, row.Ended, row.Duration, r.UpdatedAt, u.Sub(c))
		}
	}

	setInput(t, bctx, "#filter-workflow", `'retrystep'`)
	awaitList(t, bctx, "workflow retrystep", []string{"long-1", "retry-1"})
	setInput(t, bctx, "#filter-workflow", `''`)
	awaitList(t, bctx, "every workflow", sorted)
	setInput(t, bctx, "#filter-module", `'`+runs["appr-1"].Module+`'`)
	awaitList(t, bctx, "module approval", []string{"appr-1", "appr-2", "appr-3"})
	step("clear the filters", chromedp.Click(chromedp.CSS("#filter-clear")))
	awaitList(t, bctx, "no filter", sorted)
	setInput(t, bctx, "#filter-from", `window.skeinRunList.localOf('`+runs["retry-1"].CreatedAt+`')`)
	awaitList(t, bctx, "created from retry-1's creation", []string{"appr-3", "long-1", "retry-1"})
	setInput(t, bctx, "#filter-to", `window.skeinRunList.localOf('`+runs["long-1"].CreatedAt+`')`)
	awaitList(t, bctx, "created from retry-1's creation, before long-1's", []string{"retry-1"})
	step("clear the time range", chromedp.Click(chromedp.CSS("#filter-clear")))
	awaitList(t, bctx, "no filter", sorted)

	for _, c := range []struct {
		sort string
		desc bool
	}{{"duration", false}, {"duration", true}, {"status", false}, {"created", false}, {"ended", false}} {
		dir := "asc"
		if c.desc {
			dir = "desc"
		}
		step("sort by "+c.sort+" "+dir,
			chromedp.Click(chromedp.CSS(`th.sortable[data-sort="`+c.sort+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`th.sorted[data-sort="`+c.sort+`"][data-dir="`+dir+`"]`)))
		awaitList(t, bctx, "sorted by "+c.sort+" "+dir, sortRuns(t, runs, store.RunOrder(c.sort), c.desc))
	}
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sortRuns orders the runs as the list must: by their key under o, then
// by id, both descending with desc.
func sortRuns(t *testing.T, runs map[string]apiRun, o store.RunOrder, desc bool) []string {
	t.Helper()
	type keyed struct {
		key int64
		id  string
	}
	var all []keyed
	for _, r := range runs {
		sr := store.Run{ID: r.ID, Status: store.RunStatus(r.Status), CreatedAt: parseTime(t, r.CreatedAt), UpdatedAt: parseTime(t, r.UpdatedAt)}
		all = append(all, keyed{store.RunSortKey(sr, o, desc), r.ID})
	}
	slices.SortFunc(all, func(a, b keyed) int {
		c := cmp.Or(cmp.Compare(a.key, b.key), strings.Compare(a.id, b.id))
		if desc {
			c = -c
		}
		return c
	})
	ids := make([]string, len(all))
	for i, k := range all {
		ids[i] = k.id
	}
	return ids
}
