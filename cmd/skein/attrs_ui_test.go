package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAttributesUI opens, in headless Chromium, a run's page, which shows
// its search attributes, and the runs list, whose attributes cell links
// each value to the list of the runs that carry it.
func TestAttributesUI(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	defer s.stop(t)
	deployExample(t, s, "", "./examples/attrs")
	for name, typ := range map[string]string{"customer": "int", "region": "string", "stage": "string", "priority": "float", "closed": "bool", "closed_at": "time"} {
		want(t, "declare "+name, s.call(t, "POST", "/v1/attributes", "", map[string]string{"name": name, "type": typ}), 201, "")
	}
	for id, in := range map[string]string{"u1": `{"customer":42,"region":"eu"}`, "u2": `{"customer":7,"region":"us"}`} {
		wantExit(t, s.cli(t, nil, "start", "attrs", "--id", id, "--input", in), 0)
		s.awaitStatus(t, id, "", "completed")
	}
	step := browserSteps(t, chrome)
	step("the run page shows the run's attributes",
		chromedp.Navigate(s.url+"/#/run/u1"),
		chromedp.WaitVisible(chromedp.CSS(`#run-attrs a.attr[data-name="customer"][data-value="42"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-attrs a.attr[data-name="region"][data-value="eu"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-attrs a.attr[data-name="stage"][data-value="done"]`)))
	step("the runs list shows each run's attributes",
		chromedp.Navigate(s.url+"/#/runs"),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="u2"] td.attrs a.attr[data-name="customer"][data-value="7"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="u1"] td.attrs a.attr[data-name="region"][data-value="eu"]`)))
	step("an attribute's chip lists the runs with its value",
		chromedp.Click(chromedp.CSS(`tr.run-row[data-run="u2"] td.attrs a.attr[data-name="region"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#attr-filters`)),
		void(chromedp.Poll[bool](`document.querySelectorAll('tr.run-row').length === 1 && !!document.querySelector('tr.run-row[data-run="u2"]')`, chromedp.WithPollingTimeout(10*time.Second))))
	step("clearing the filter lists every run again",
		chromedp.Click(chromedp.CSS(`#attr-filters-clear`)),
		void(chromedp.Poll[bool](`document.querySelectorAll('tr.run-row').length === 2 && !document.querySelector('#attr-filters')`, chromedp.WithPollingTimeout(10*time.Second))))
}
