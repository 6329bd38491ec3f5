package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

const parentCloseWorkflows = "./testdata/workflows/parentclose"

// parentInput is the input of the parentclose workflow "parent": a 100 ms
// timer wins over a child that sleeps child.
func parentInput(policy, child string) string {
	return fmt.Sprintf(`{"policy":%q,"timer":"100ms","child":%q}`, policy, child)
}

// skein run of a parent whose timer wins over its slow child: with the
// default policy the child ends canceled, with a reason naming the
// parent, before the CLI exits (nothing is left running); with abandon
// the CLI exits leaving the child running, marked abandoned, and a later
// skein serve on the database completes it.
func TestParentCloseSkeinRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "skein.db")
	wasm := wasmbuild.Build(t, parentCloseWorkflows)

	r := skein(t, dir, "run", wasm, "--db", db, "--workflow", "parent", "--id", "pc", "--input", parentInput("", "1h"), "--json")
	wantExit(t, r, 0)
	if v := decodeRun(t, r); v.Status != "completed" || !jsonEq(t, v.Result, `"the timer won"`) {
		t.Fatalf("parent: %+v", v)
	}
	if strings.Contains(r.stderr, "child run stopped") {
		t.Errorf("skein run stopped the child's drive instead of ending it:\n%s", r)
	}
	c := decodeRun(t, skein(t, dir, "inspect", "pc.1", "--db", db, "--json"))
	if c.Status != "canceled" || c.Error == nil || !strings.Contains(*c.Error, "parent run pc ended (completed)") || c.Abandoned {
		t.Fatalf("child after skein run exited: %s %v, abandoned %v; want canceled by its parent's end", c.Status, c.errorText(), c.Abandoned)
	}

	r = skein(t, dir, "run", wasm, "--db", db, "--workflow", "parent", "--id", "pa", "--input", parentInput("abandon", "2s"), "--json")
	wantExit(t, r, 0)
	c = decodeRun(t, skein(t, dir, "inspect", "pa.1", "--db", db, "--json"))
	if c.Status == "completed" || c.Status == "canceled" || !c.Abandoned {
		t.Fatalf("abandoned child after skein run exited: %s, abandoned %v; want not ended, abandoned", c.Status, c.Abandoned)
	}
	wantExit(t, skein(t, dir, "inspect", "pa.1", "--db", db), 0, "abandoned: its parent ended first and left it running")
	s := startServer(t, db, nil, "--poll", "50ms")
	defer s.stop(t)
	got := s.awaitStatus(t, "pa.1", "", "completed", "failed", "canceled")
	if got.Status != "completed" || !jsonEq(t, got.Result, `"slept 2s"`) || !got.Abandoned || got.ParentClose != "abandon" || got.Parent != "pa" {
		t.Fatalf("abandoned child under skein serve: %+v; want completed, abandoned", got)
	}
	wantExit(t, s.cli(t, nil, "status", "pa.1"), 0, "run pa.1 (slow): completed", "parent: pa", "abandoned: its parent ended first")
	wantExit(t, s.cli(t, nil, "status", "pc.1"), 1, "run pc.1 (slow): canceled", "parent close: cancel")
}

// The same under skein serve: the canceled child ends canceled, the
// abandoned one is shown abandoned while it runs and completes on its own.
func TestParentCloseServe(t *testing.T) {
	t.Parallel()
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	defer s.stop(t)
	parentCloseServe(t, s.cli, s, s)
}

// The same on two workers sharing Postgres: the parent starts on one, and
// whichever worker holds the child delivers what the parent's end does.
func TestParentCloseCluster(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	w1 := startClusterWorker(t, dsn, "w1")
	w2 := startClusterWorker(t, dsn, "w2")
	parentCloseServe(t, w1.cli, w1.skeinServer, w2.skeinServer)
}

// parentCloseServe starts both parents through a and reads their
// children through b.
func parentCloseServe(t *testing.T, cli func(*testing.T, []string, ...string) result, a, b *skeinServer) {
	t.Helper()
	wantExit(t, cli(t, nil, "deploy", wasmbuild.Build(t, parentCloseWorkflows), "--name", "pclose"), 0)
	for _, c := range []struct{ id, policy, child string }{{"sc", "cancel", "1h"}, {"sa", "abandon", "3s"}} {
		body := fmt.Sprintf(`{"module":"pclose","workflow":"parent","input":%s,"id":%q}`, parentInput(c.policy, c.child), c.id)
		if r := a.call(t, "POST", "/v1/runs", "", body); r.status != http.StatusCreated {
			t.Fatalf("start %s: %s", c.id, r)
		}
		if p := b.awaitStatus(t, c.id, "", "completed", "failed", "canceled"); p.Status != "completed" || !jsonEq(t, p.Result, `"the timer won"`) {
			t.Fatalf("parent %s: %+v", c.id, p)
		}
	}
	child := b.awaitStatus(t, "sc.1", "", "canceled", "completed", "failed")
	if child.Status != "canceled" || !strings.Contains(child.Error, "parent run sc ended (completed)") || child.ParentClose != "cancel" || child.Abandoned {
		t.Fatalf("canceled child: %+v", child)
	}
	if got := b.getRun(t, "sa.1", ""); !got.Abandoned || got.ParentClose != "abandon" || got.Status == "completed" {
		t.Fatalf("abandoned child right after its parent: %+v; want abandoned, not ended yet", got)
	}
	child = b.awaitStatus(t, "sa.1", "", "completed", "canceled", "failed")
	if child.Status != "completed" || !jsonEq(t, child.Result, `"slept 3s"`) || !child.Abandoned {
		t.Fatalf("abandoned child: %+v; want completed on its own", child)
	}
}

// TestParentCloseUI opens, in headless Chromium, the run page of a child
// its parent abandoned, and of one its parent's end canceled: the first
// is tagged abandoned, the second shows its policy; the runs list tags
// the abandoned child.
func TestParentCloseUI(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil)
	defer s.stop(t)
	wantExit(t, s.cli(t, nil, "deploy", wasmbuild.Build(t, parentCloseWorkflows), "--name", "pclose"), 0)
	for _, c := range []struct{ id, policy string }{{"uc", "cancel"}, {"ua", "abandon"}} {
		wantExit(t, s.cli(t, nil, "start", "pclose", "--workflow", "parent", "--input", parentInput(c.policy, "1h"), "--id", c.id), 0)
		s.awaitStatus(t, c.id, "", "completed")
	}
	s.awaitStatus(t, "uc.1", "", "canceled")

	step := browserSteps(t, chrome)

	step("the abandoned child's page says so",
		chromedp.Navigate(s.url+"/#/run/ua.1"),
		chromedp.WaitVisible(chromedp.CSS(`#run-parent[href="#/run/ua"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-parent-close[data-abandoned="true"] #run-abandoned`)))
	step("the canceled child's page shows its policy",
		chromedp.Navigate(s.url+"/#/run/uc.1"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="canceled"]`)),
		void(chromedp.Poll[bool](`(document.querySelector('#run-parent-close[data-abandoned="false"]') || {}).textContent === 'cancel'`, chromedp.WithPollingTimeout(10*time.Second))))
	step("the runs list tags the abandoned child",
		chromedp.Navigate(s.url+"/#/runs"),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="ua.1"] .tag.abandoned`)))
}
