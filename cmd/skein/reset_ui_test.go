package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestResetUI resets a run from its run page in headless Chromium: the
// detail panel of a settled op has "Reset to here", which asks for
// confirmation ("Keep the run" does nothing), then goes to the new run,
// whose page says where it was reset from; the original's page says
// "reset → NEW" and offers no reset any more; a pending op offers none.
func TestResetUI(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--poll", "50ms")
	defer s.stop(t)
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, resetWorkflows), "--name", "reset"), 0)
	wantExit(t, s.cli(t, nil, "start", "reset", "--workflow", "seq", "--input", `{"tag":"x"}`, "--id", "u1"), 0)
	wantExit(t, s.cli(t, nil, "start", "reset", "--workflow", "race", "--input", `{"tag":"x"}`, "--id", "u2"), 0)
	s.awaitStatus(t, "u1", "", "completed")
	s.awaitStatus(t, "u2", "", "completed")
	step := browserSteps(t, chrome)
	type act = chromedp.Action[chromedp.Void]
	open := func(run, key string, then ...act) []act {
		row := `#tree tr.op[data-key="` + key + `"] button.op-open`
		return append([]act{chromedp.Navigate(s.url + "/#/run/" + run), chromedp.WaitVisible(chromedp.CSS(row)), chromedp.Click(chromedp.CSS(row)),
			chromedp.WaitVisible(chromedp.CSS(`#op-detail[data-key="` + key + `"]`))}, then...)
	}
	step("a pending op offers no reset", open("u2", "1",
		void(chromedp.Poll[bool](`!document.querySelector('#reset-here')`, chromedp.WithPollingTimeout(5*time.Second))))...)
	step("Reset to here asks first; Keep the run keeps it", open("u1", "3",
		chromedp.Click(chromedp.CSS(`#reset-here[data-key="3"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#reset-confirm`)),
		chromedp.Click(chromedp.CSS(`#reset-keep`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#reset-confirm`)))...)
	if got := s.getRun(t, "u1", ""); got.Status != "completed" {
		t.Fatalf("u1 after Keep the run: %s, want completed", got.Status)
	}
	step("Reset goes to the new run, which links back", chromedp.Click(chromedp.CSS(`#reset-here[data-key="3"]`)),
		chromedp.Click(chromedp.CSS(`#reset-go`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-id`)),
		void(chromedp.Poll[bool](`location.hash === '#/run/u1~reset-1'`, chromedp.WithPollingTimeout(10*time.Second))),
		chromedp.WaitVisible(chromedp.CSS(`#run-reset-from-link[href="#/run/u1"]`)),
		void(chromedp.Poll[bool](`document.querySelector('#run-reset-key').textContent === '3'`, chromedp.WithPollingTimeout(5*time.Second))))
	if got := s.awaitStatus(t, "u1~reset-1", "", "completed"); got.ResetFrom != "u1" || got.ResetKey != "3" {
		t.Errorf("the new run: %+v", got)
	}
	step("the original says reset → the new run and offers no reset", open("u1", "2",
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="reset"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-reset-to-link[href="#/run/u1~reset-1"]`)),
		void(chromedp.Poll[bool](`!document.querySelector('#reset-here')`, chromedp.WithPollingTimeout(5*time.Second))))...)
}
