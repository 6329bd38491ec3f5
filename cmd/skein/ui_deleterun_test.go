package main

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUIDeleteRun: an ended run's page has Delete run…, which asks
// first; a run a live parent needs is refused and the banner names the
// rule; an ended run nothing needs is deleted (the API answers 404) and
// the page goes to the run list. A live run's page has no Delete.
func TestUIDeleteRun(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	s := startServe(t, []string{"--db", t.TempDir() + "/skein.db"}, nil, "--poll", "50ms")
	retentionRuns(t, s)
	step := browserSteps(t, chrome)
	step("a live run has no Delete",
		chromedp.Navigate(s.url+"/#/run/fam"),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-run`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#delete-run`)))
	step("the child of a live parent is refused, naming the rule",
		chromedp.Navigate(s.url+"/#/run/fam.1"),
		chromedp.WaitVisible(chromedp.CSS(`#delete-run`)),
		chromedp.Click(chromedp.CSS(`#delete-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#delete-question`)),
		chromedp.Click(chromedp.CSS(`#delete-confirm`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="banner" and contains(@class, "error") and contains(., "its parent run fam has not ended")]`)))
	s.wantKept(t, "fam.1")
	step("keep it, then delete the ended run done",
		chromedp.Navigate(s.url+"/#/run/done"),
		chromedp.WaitVisible(chromedp.CSS(`#delete-run`)),
		chromedp.Click(chromedp.CSS(`#delete-run`)),
		chromedp.Click(chromedp.CSS(`#delete-keep`)),
		chromedp.WaitVisible(chromedp.CSS(`#delete-run`)),
		chromedp.Click(chromedp.CSS(`#delete-run`)),
		chromedp.Click(chromedp.CSS(`#delete-confirm`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs-table tr[data-run="fam"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#runs-table tr[data-run="done"]`)))
	s.awaitGone(t, "done")
}
