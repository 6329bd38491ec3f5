package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPauseUI: on the run page of a suspended run, Pause holds the run
// and shows "Paused by api since …: paused from the UI"; the runs list
// marks it paused; Unpause lets it go, and the banner goes away.
func TestPauseUI(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	defer s.stop(t)
	deployPause(t, s, "v1", "pz")
	wantExit(t, s.cli(t, nil, "start", "pz", "--workflow", "hold", "--input", `{"ms":60000}`, "--id", "ui-hold"), 0)
	s.awaitStatus(t, "ui-hold", "", "suspended")

	step := browserSteps(t, chrome)
	step("pause the run from its page",
		chromedp.Navigate(s.url+"/#/run/ui-hold"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="suspended"]`)),
		chromedp.Click(chromedp.CSS(`#pause-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-paused[data-by="api"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#unpause-run`)),
		void(chromedp.Poll[bool](`(t => t.startsWith('Paused by api since ') && t.includes(': paused from the UI'))(document.querySelector('#run-paused').textContent)`,
			chromedp.WithPollingTimeout(5*time.Second))))
	if run := s.getRun(t, "ui-hold", ""); run.Paused == nil || run.Paused.Reason != "paused from the UI" {
		t.Errorf("after the page's Pause the run is %+v; want paused from the UI", run)
	}
	step("the runs list marks it paused",
		chromedp.Navigate(s.url+"/#/runs"),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="ui-hold"] .tag.paused`)))
	step("unpause it from its page",
		chromedp.Navigate(s.url+"/#/run/ui-hold"),
		chromedp.Click(chromedp.CSS(`#unpause-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#pause-run`)),
		void(chromedp.Poll[bool](`!document.querySelector('#run-paused')`, chromedp.WithPollingTimeout(10*time.Second))))
	if run := s.getRun(t, "ui-hold", ""); run.Paused != nil || run.Status != "suspended" {
		t.Errorf("after the page's Unpause the run is %+v; want suspended, not paused", run)
	}
}
