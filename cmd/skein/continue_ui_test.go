package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skeinrun/skein/internal/wasmbuild"
)

// TestContinueAsNewUI opens, in headless Chromium, the run page of a run
// that continued as new: it links to its successor, whose page links
// back; the runs list filters by status continued.
func TestContinueAsNewUI(t *testing.T) {
	chrome := needChromium(t)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	defer s.stop(t)
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, continueWorkflows), "--name", "cont"), 0)
	wantExit(t, s.cli(t, nil, "start", "cont", "--workflow", "loop", "--input", `{"per":1,"total":2}`, "--id", "ui"), 0)
	s.awaitStatus(t, "ui", "", "continued")
	s.awaitStatus(t, "ui~2", "", "completed")

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chrome), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil { // the browser lives as long as bctx
		t.Fatalf("start chromium %s: %v", chrome, err)
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 15*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			html, _ := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("main")))
			t.Fatalf("%s: %v\npage:\n%s", what, err, html)
		}
	}
	step("the continued run's page links to its successor",
		chromedp.Navigate(s.url+"/#/run/ui"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="continued"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-continued-as[href="#/run/ui~2"]`)))
	step("the successor's page links back",
		chromedp.Click(chromedp.CSS(`#run-continued-as`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="completed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-continued-from[href="#/run/ui"]`)))
	step("the runs list filters the continued runs",
		chromedp.Navigate(s.url+"/#/runs"),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="ui~2"]`)),
		chromedp.Click(chromedp.CSS(`button.filter[data-status="continued"]`)),
		void(chromedp.Poll[bool](`document.querySelectorAll('tr.run-row').length === 1 && !!document.querySelector('tr.run-row[data-run="ui"]')`, chromedp.WithPollingTimeout(10*time.Second))))
}
