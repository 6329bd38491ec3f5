package main

// The run page's timeline in the browser test (ui_test.go): the race's
// two chains as bars that overlap in time, the approval's pending promise
// as an open bar, the instance drop and its replay.

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// tlBar is a timeline bar as the page's data attributes give it.
type tlBar struct {
	Key      string  `json:"key"`
	Status   string  `json:"status"`
	Open     bool    `json:"open"`
	Start    float64 `json:"start"` // ms since the epoch
	End      float64 `json:"end"`   // 0 while open
	Duration float64 `json:"duration"`
	Text     string  `json:"text"`  // the duration as the page writes it
	Right    float64 `json:"right"` // the bar's right edge, px from the track's right edge
}

// tlBars reads the timeline's bars by key.
func tlBars(t *testing.T, bctx context.Context) map[string]tlBar {
	t.Helper()
	bars, err := chromedp.Run(bctx, chromedp.Evaluate[[]tlBar](`Array.from(document.querySelectorAll('#timeline .tl-op')).map(row => {
		const b = row.querySelector('.tl-bar'), track = row.querySelector('.tl-track');
		return {key: b.dataset.key, status: b.dataset.status, open: b.dataset.open === 'true',
			start: Number(b.dataset.start), end: Number(b.dataset.end || 0), duration: Number(b.dataset.durationMs),
			text: row.querySelector('.tl-dur-text').textContent,
			right: track.getBoundingClientRect().right - b.getBoundingClientRect().right};
	})`))
	if err != nil {
		t.Fatalf("read the timeline: %v", err)
	}
	m := map[string]tlBar{}
	for _, b := range bars {
		m[b.Key] = b
	}
	return m
}

// checkRaceTimeline: every op of the race has a bar with a real
// duration; the slow chain's first step (a 100 ms body) overlaps both
// steps of the fast chain, in groups t2 and t3.
func checkRaceTimeline(t *testing.T, bctx context.Context) {
	t.Helper()
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`#timeline .tl-bar[data-key="t3.2"]`))); err != nil {
		t.Fatalf("the race's timeline: %v", err)
	}
	bars := tlBars(t, bctx)
	for _, k := range []string{"1", "t2.1", "t2.2", "t3.1", "t3.2"} {
		b, ok := bars[k]
		if !ok {
			t.Errorf("no timeline bar for %s (bars %+v)", k, bars)
			continue
		}
		if b.Open || b.Status != "ok" || b.Start <= 0 || b.End < b.Start || b.Duration <= 0 || b.Text == "" {
			t.Errorf("bar %s = %+v; want a settled bar with a duration > 0, written out", k, b)
		}
	}
	overlap := func(a, b tlBar) bool { return a.Start < b.End && b.Start < a.End }
	slow := bars["t2.1"]
	if slow.Duration < 100 {
		t.Errorf("the slow step's bar lasts %.3f ms; its body sleeps 100 ms", slow.Duration)
	}
	for _, k := range []string{"t3.1", "t3.2"} {
		if !overlap(slow, bars[k]) {
			t.Errorf("the race's chains do not overlap: t2.1 %+v, %s %+v", slow, k, bars[k])
		}
	}
	groups, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#timeline .tl-group')).map(g => g.dataset.scope)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 3 || groups[0] != "" {
		t.Errorf("timeline groups %q; want the root task, t2 and t3", groups)
	}
}

// checkPendingTimeline: the approval waits on its promise: an open bar
// that reaches the chart's right edge, the settled submit step, and the
// drop of its instance (suspended, not replayed yet).
func checkPendingTimeline(t *testing.T, bctx context.Context) {
	t.Helper()
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`#timeline .tl-bar[data-key="decision"][data-open="true"]`))); err != nil {
		t.Fatalf("the approval's open bar: %v", err)
	}
	bars := tlBars(t, bctx)
	d := bars["decision"]
	if !d.Open || d.End != 0 || d.Status != "pending" || d.Duration <= 0 || d.Right > 2 {
		t.Errorf("the pending promise's bar %+v; want open, reaching the right edge, with a duration so far", d)
	}
	if s := bars["1"]; s.Open || s.Status != "ok" || s.Duration <= 0 || s.End > d.Start+1 {
		t.Errorf("the submit step's bar (key 1) %+v; want settled before the promise (%+v) was issued", s, d)
	}
	waitDrop(t, bctx, `#timeline-drops .tl-drop-mark[data-seq="1"][data-replayed=""]`, "the suspended approval's instance drop")
	checkIdleBand(t, bctx)
}

// checkSettledTimeline: once settled, the promise's bar is closed and
// the drop shows the replay that delivered the settlement.
func checkSettledTimeline(t *testing.T, bctx context.Context) {
	t.Helper()
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`#timeline .tl-bar[data-key="decision"][data-open="false"]`))); err != nil {
		t.Fatalf("the approval's settled bar: %v", err)
	}
	bars := tlBars(t, bctx)
	if d := bars["decision"]; d.Status != "ok" || d.End <= d.Start {
		t.Errorf("the settled promise's bar %+v", d)
	}
	if d := bars["deadline"]; d.Open || d.Status != "pending" || d.Text != "never settled (the run ended)" {
		t.Errorf("the timer left pending when the run completed: %+v; want a closed bar that says it never settled", d)
	}
	waitDrop(t, bctx, `#timeline-drops .tl-drop-mark[data-seq="1"]:not([data-replayed=""])`, "the approval's replay after the settlement")
}

func waitDrop(t *testing.T, bctx context.Context, sel, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		html, _ := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("#timeline")))
		t.Fatalf("%s (%s): %v\n%s", what, sel, err, html)
	}
}

// grantClipboard lets the page read the clipboard (checkClipboard).
func grantClipboard(t *testing.T, bctx context.Context) {
	t.Helper()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		p := browser.SetPermissionParams{Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingGranted}
		if _, err := chromedp.CallBrowser(bctx, browser.SetPermission, p); err != nil {
			t.Fatalf("grant the page %s: %v", name, err)
		}
	}
}

// checkClipboard reads the clipboard after the copy button was clicked:
// it holds the full id.
func checkClipboard(t *testing.T, bctx context.Context, want string) {
	t.Helper()
	got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("read the clipboard: %v", err)
	}
	if got != want {
		t.Errorf("the clipboard holds %q after the copy; want the full id %q", got, want)
	}
}

// checkRetryTimeline: the bar of a step that failed twice, then succeeded
// holds its three attempts, the first two failed, and the row lists their
// errors.
func checkRetryTimeline(t *testing.T, bctx context.Context) {
	t.Helper()
	type try struct {
		N     string  `json:"n"`
		Error string  `json:"error"`
		Dur   float64 `json:"dur"`
	}
	tries, err := chromedp.Run(bctx, chromedp.Evaluate[[]try](`Array.from(document.querySelectorAll('#timeline .tl-bar[data-key="1"] .tl-try')).map(e =>
		({n: e.dataset.n, error: e.dataset.error, dur: Number(e.dataset.durationMs)}))`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"flaky (attempt 1)", "flaky (attempt 2)", ""}
	if len(tries) != len(want) {
		t.Fatalf("the retried step's attempts on the timeline: %+v; want 3", tries)
	}
	for i, tr := range tries {
		if tr.N != string(rune('1'+i)) || tr.Error != want[i] || tr.Dur < 0 {
			t.Errorf("attempt %d on the timeline: %+v; want error %q", i+1, tr, want[i])
		}
	}
	errs, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#timeline .tl-op[data-key="1"] .tl-error')).map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 2 || errs[0] != "#1 flaky (attempt 1)" || errs[1] != "#2 flaky (attempt 2)" {
		t.Errorf("the errors listed for the retried step: %q", errs)
	}
}
