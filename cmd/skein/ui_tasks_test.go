package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUIActivityTasks opens the run page of a run whose remote call a
// worker holds: the page lists the task with its worker and state, and
// the previous attempt's error of a call that is being retried.
func TestUIActivityTasks(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	s := startServer(t, filepath.Join(t.TempDir(), "ui.db"), nil)
	startRemote(t, s, "", `{"n":1,"name":"slow"}`, "ui-slow")
	want(t, "start ui-fail", s.call(t, "POST", "/v1/runs", "", map[string]any{"module": "remote", "id": "ui-fail",
		"input": json.RawMessage(`{"n":1,"name":"fail","attempts":1000}`)}), 201, "")
	w := startWorker(t, buildTool(t, "./testdata/taskworker"), "--server", s.url, "--id", "ui-worker", "--delay", "1h")
	w.awaitLines(t, "START slow ui-slow", 1)
	w.awaitLines(t, "START fail ui-fail", 2)

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chrome), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx,
		chromedp.Navigate(s.url+"/#/run/ui-slow"),
		chromedp.WaitVisible(chromedp.CSS(`#tasks tr.task-row[data-key="1"][data-state="claimed"]`))); err != nil {
		t.Fatalf("run page of ui-slow: %v", err)
	}
	row, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(`#tasks tr.task-row`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"slow", "claimed", "ui-worker"} {
		if !strings.Contains(row, s) {
			t.Errorf("task row %q lacks %q", row, s)
		}
	}
	if err := chromedp.Do(bctx,
		chromedp.Navigate(s.url+"/#/run/ui-fail"),
		chromedp.WaitVisible(chromedp.CSS(`#tasks tr.task-row[data-key="1"]`))); err != nil {
		t.Fatalf("run page of ui-fail: %v", err)
	}
	row, err = chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(`#tasks tr.task-row`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(row, "fail: it always fails") {
		t.Errorf("task row of a retried call %q lacks the last attempt's error", row)
	}
}
