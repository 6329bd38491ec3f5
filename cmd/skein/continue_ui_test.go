package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestContinueAsNewUI opens, in headless Chromium, the run page of a run
// that continued as new: it links to its successor, whose page links
// back; the runs list filters by status continued.
func TestContinueAsNewUI(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	defer s.stop(t)
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, continueWorkflows), "--name", "cont"), 0)
	wantExit(t, s.cli(t, nil, "start", "cont", "--workflow", "loop", "--input", `{"per":1,"total":2}`, "--id", "ui"), 0)
	s.awaitStatus(t, "ui", "", "continued")
	s.awaitStatus(t, "ui~2", "", "completed")

	step := browserSteps(t, chrome)

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
