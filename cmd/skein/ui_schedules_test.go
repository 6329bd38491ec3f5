package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUISchedules opens the schedules page of a live server in headless
// Chromium: a one-second schedule with its next slots, its latest run and
// its counts, paused and triggered from the page; a hook and its endpoint.
func TestUISchedules(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	const token = "ui-s3cret"
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--token", token)
	deployExample(t, s, token, "./examples/digest")
	want(t, "create schedule", s.call(t, "POST", "/v1/schedules", token, map[string]any{
		"name": "daily", "cron": "* * * * * *", "module": "digest", "input": map[string]any{"feed": "releases"}, "overlap": "allow"}), 201, "")
	want(t, "create hook", s.call(t, "POST", "/v1/hooks", token, map[string]any{"name": "gh", "module": "digest"}), 201, "")

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chrome), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The first action starts the browser: on bctx, so that it outlives
	// each step's deadline.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
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
	eval := func(what, expr string) []string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	step("open the schedules page",
		chromedp.Navigate(s.url+"/#/schedules"),
		chromedp.WaitVisible(chromedp.CSS("#token-input")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), token),
		chromedp.Click(chromedp.CSS("#token-save")),
		chromedp.WaitVisible(chromedp.CSS(`tr.schedule-row[data-schedule="daily"][data-paused="false"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.hook-row[data-hook="gh"]`)),
		// The page refreshes: the schedule's first run shows up.
		chromedp.WaitVisible(chromedp.CSS(`tr.schedule-row[data-schedule="daily"] a.run-link`)))
	if next := eval("next slots", `Array.from(document.querySelectorAll('tr.schedule-row td.next div')).map(d => d.textContent)`); len(next) != 3 {
		t.Errorf("next slots on the page %q; want 3", next)
	}
	if link := eval("last run", `Array.from(document.querySelectorAll('tr.schedule-row a.run-link')).map(a => a.textContent)`); len(link) != 1 || !strings.HasPrefix(link[0], "sched:daily@") {
		t.Errorf("last run on the page %q; want a sched:daily@ run", link)
	}
	if hook := eval("hook", `Array.from(document.querySelectorAll('tr.hook-row td')).map(d => d.textContent)`); len(hook) != 4 || hook[1] != "POST /v1/hooks/gh" {
		t.Errorf("hook row %q", hook)
	}
	step("pause it",
		chromedp.Click(chromedp.CSS(`tr.schedule-row[data-schedule="daily"] button.pause`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.schedule-row[data-schedule="daily"][data-paused="true"]`)))
	step("run it now",
		chromedp.Click(chromedp.CSS(`tr.schedule-row[data-schedule="daily"] button.trigger`)),
		void(chromedp.Poll[bool](`location.hash.startsWith('#/run/sched%3Adaily%40trigger-')`, chromedp.WithPollingTimeout(10*time.Second))),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="completed"]`)))
	sc := getScheduleToken(t, s, "daily", token)
	if !sc.Paused || sc.Fired < 1 {
		t.Errorf("schedule after the page's pause: paused %v, fired %d", sc.Paused, sc.Fired)
	}
}
