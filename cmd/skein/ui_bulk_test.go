package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skeinrun/skein/internal/testing/testgroup"
)

// TestUIBulkCancel: in headless Chromium, the runs list's filter box
// takes the filter language (a bad filter shows the rule it broke), two
// runs of those it shows are selected and canceled as a batch, whose
// progress the page shows until it is done: those two runs are canceled,
// no other.
func TestUIBulkCancel(t *testing.T) {
	testgroup.Slow(t, "batches", "headless Chromium over a batch (about 5 s)")
	t.Parallel()
	chrome := needChromium(t)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	deployServerModule(t, s, nil)
	ids := startWaiters(t, s, "u", 4)
	want(t, "start echo", s.call(t, "POST", "/v1/runs", "", `{"module":"srv","workflow":"echo","input":"x","id":"e-1"}`), 201, "")
	s.awaitStatus(t, "e-1", "", "completed")
	step := browserSteps(t, chrome)
	rowsExpr := `Array.from(document.querySelectorAll('#runs-table tr.run-row')).map(r => r.dataset.run).join(',')`
	step("a bad filter names the rule",
		chromedp.Navigate(s.url+"/#/runs"),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="e-1"]`)),
		chromedp.SendKeys(chromedp.CSS("#run-where"), "status = bogus"),
		chromedp.Click(chromedp.CSS(`#run-where-form button[type="submit"]`)),
		void(chromedp.Poll[bool](`document.getElementById('banner').textContent.includes('want one of pending')`, chromedp.WithPollingTimeout(10*time.Second))))
	step("filter the waiters",
		chromedp.Navigate(s.url+"/#/runs"),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="e-1"]`)),
		chromedp.SendKeys(chromedp.CSS("#run-where"), "workflow = waiter and status = suspended"),
		chromedp.Click(chromedp.CSS(`#run-where-form button[type="submit"]`)),
		void(chromedp.Poll[bool](rowsExpr+` === 'u-000,u-001,u-002,u-003'`, chromedp.WithPollingTimeout(10*time.Second))))
	step("cancel two selected runs",
		chromedp.Click(chromedp.CSS(`tr.run-row[data-run="u-001"] input.select`)),
		chromedp.Click(chromedp.CSS(`tr.run-row[data-run="u-002"] input.select`)),
		chromedp.SendKeys(chromedp.CSS("#bulk-reason"), "from the ui"),
		void(chromedp.Poll[bool](`document.getElementById('bulk-cancel').textContent === 'Cancel selected (2)'`, chromedp.WithPollingTimeout(5*time.Second))),
		chromedp.Click(chromedp.CSS("#bulk-cancel")),
		chromedp.WaitVisible(chromedp.CSS("#bulk-confirm")),
		chromedp.Click(chromedp.CSS("#bulk-confirm")),
		chromedp.WaitVisible(chromedp.CSS(`#bulk-progress[data-status="done"]`)),
		void(chromedp.Poll[bool](`document.getElementById('bulk-progress').textContent.includes('cancel done, 2 of 2 runs (0 failed)')`, chromedp.WithPollingTimeout(5*time.Second))))
	step("pause another selected run",
		chromedp.SetValue(chromedp.CSS("#bulk-action"), "pause"),
		void(chromedp.Evaluate[bool](`document.getElementById('bulk-action').dispatchEvent(new Event('change'))`)),
		chromedp.Click(chromedp.CSS(`tr.run-row[data-run="u-003"] input.select`)),
		void(chromedp.Poll[bool](`document.getElementById('bulk-cancel').textContent === 'Pause selected (1)'`, chromedp.WithPollingTimeout(5*time.Second))),
		chromedp.Click(chromedp.CSS("#bulk-cancel")),
		chromedp.WaitVisible(chromedp.CSS("#bulk-confirm")),
		chromedp.Click(chromedp.CSS("#bulk-confirm")),
		void(chromedp.Poll[bool](`document.getElementById('bulk-progress').textContent.includes('pause done, 1 of 1 runs (0 failed)')`, chromedp.WithPollingTimeout(10*time.Second))))
	for _, id := range []string{"u-000", "u-003"} {
		run := decodeJSON[apiRun](t, "run "+id, s.call(t, "GET", "/v1/runs/"+id, "", nil).body)
		if paused := run.Paused != nil && run.Paused.By == "batch"; paused != (id == "u-003") {
			t.Errorf("%s: paused %+v; want paused by batch: %v", id, run.Paused, id == "u-003")
		}
	}
	for i, id := range ids {
		run := s.awaitStatus(t, id, "", "canceled", "suspended")
		if by := run.CancelReason == "from the ui"; by != (i == 1 || i == 2) {
			t.Errorf("%s: status %s, cancel reason %q; want canceled: %v", id, run.Status, run.CancelReason, i == 1 || i == 2)
		}
	}
}
