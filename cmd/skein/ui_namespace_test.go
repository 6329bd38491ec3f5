package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// nsSend sends one API request in namespace ns (header X-Skein-Namespace):
// body as JSON, or as a module when it is []byte.
func nsSend(t *testing.T, s *skeinServer, token, ns, method, path string, body any) reply {
	t.Helper()
	hdr := map[string]string{"Authorization": "Bearer " + token, "X-Skein-Namespace": ns, "Content-Type": "application/json"}
	var data []byte
	switch b := body.(type) {
	case []byte:
		data, hdr["Content-Type"] = b, "application/wasm"
	case nil:
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		data = j
	}
	return s.send(t, method, path, hdr, data)
}

// nsDeploy deploys an example workflow in namespace ns under its folder's name.
func nsDeploy(t *testing.T, s *skeinServer, token, ns, pkg string) {
	t.Helper()
	wasm, err := os.ReadFile(wasmbuild.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	want(t, "deploy "+pkg+" in "+ns, nsSend(t, s, token, ns, "POST", "/v1/modules?name="+filepath.Base(pkg), wasm), 201, "")
}

// TestUINamespaces opens the UI of a live server in headless Chromium in
// two namespaces: each one's runs list, modules and hooks show its own
// records only, the picker switches between them and keeps the namespace
// in the address, a run of one namespace opened in the other is not
// found, and no page holds an id of the other namespace.
func TestUINamespaces(t *testing.T) {
	t.Parallel()
	chrome := needChromium(t)
	const token = "ui-s3cret"
	s := startServer(t, filepath.Join(t.TempDir(), "skein.db"), nil, "--token", token)
	for _, ns := range []string{"acme", "beta"} {
		want(t, "create namespace "+ns, s.call(t, "POST", "/v1/namespaces", token, map[string]any{"name": ns}), http.StatusCreated, "")
	}
	nsDeploy(t, s, token, "acme", "./examples/race")
	nsDeploy(t, s, token, "beta", "./examples/approval")
	nsDeploy(t, s, token, "default", "./examples/race")
	runs := map[string][]string{"acme": {"acme-r1", "acme-r2", "shared"}, "beta": {"beta-r1", "shared"}, "default": {"default-r1"}}
	for ns, ids := range runs {
		for _, id := range ids {
			start := map[string]any{"module": "race", "id": id}
			if ns == "beta" {
				start = map[string]any{"module": "approval", "id": id, "input": map[string]string{"request": id}}
			}
			want(t, "start "+ns+"/"+id, nsSend(t, s, token, ns, "POST", "/v1/runs", start), 201, "")
		}
	}
	want(t, "create hook in beta", nsSend(t, s, token, "beta", "POST", "/v1/hooks", map[string]any{"name": "beta-hook", "module": "approval"}), 201, "")
	want(t, "create hook in acme", nsSend(t, s, token, "acme", "POST", "/v1/hooks", map[string]any{"name": "acme-hook", "module": "race"}), 201, "")
	// What the other namespaces' pages must never show: their own run
	// ids (but the one every namespace has) and hook names.
	others := map[string][]string{
		"acme": {"beta-r1", "default-r1", "beta-hook", "approval"},
		"beta": {"acme-r1", "acme-r2", "default-r1", "acme-hook"},
	}

	bctx, step := browserSession(t, chrome)
	scan := func(ns, page string) {
		t.Helper()
		html := evalAs[string](t, bctx, `document.documentElement.outerHTML`)
		for _, id := range others[ns] {
			if strings.Contains(html, id) {
				t.Errorf("the %s page of namespace %s shows %q of another namespace", page, ns, id)
			}
		}
		if cur := textOf(t, bctx, "#ns-current"); cur != ns {
			t.Errorf("the %s page shows namespace %q; want %q", page, cur, ns)
		}
		if title := evalAs[string](t, bctx, `document.title`); !strings.Contains(title, ns) {
			t.Errorf("the %s page's title %q does not name namespace %s", page, title, ns)
		}
		if q := evalAs[string](t, bctx, `new URLSearchParams(location.search).get('ns')`); q != ns {
			t.Errorf("the %s page's address has ns=%q; want %q", page, q, ns)
		}
	}
	listed := func(ns string) {
		t.Helper()
		ids := slices.Clone(runs[ns])
		slices.Sort(ids)
		j, _ := json.Marshal(ids)
		step("the runs list of "+ns, void(chromedp.Poll[bool](`JSON.stringify(Array.from(document.querySelectorAll('tr.run-row')).map(r => r.dataset.run).sort()) === `+"`"+string(j)+"`",
			chromedp.WithPollingTimeout(10*time.Second))))
		scan(ns, "runs")
	}

	step("open the runs of acme",
		chromedp.Navigate(s.url+"/?ns=acme#/runs"),
		chromedp.WaitVisible(chromedp.CSS("#token-input")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), token),
		chromedp.Click(chromedp.CSS("#token-save")),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="acme-r1"]`)))
	listed("acme")
	step("the modules of acme", chromedp.Click(chromedp.CSS("#nav-modules")), chromedp.WaitVisible(chromedp.CSS(`tr.module-row[data-names~="race"]`)))
	scan("acme", "modules")

	// Switch with the picker: a list when the server lists namespaces,
	// else a text field.
	step("switch to beta",
		void(chromedp.Evaluate[bool](`(() => {
			const sel = document.querySelector('#ns-select');
			if (sel) {
				if (!Array.from(sel.options).some(o => o.value === 'beta')) sel.append(new Option('beta', 'beta'));
				sel.value = 'beta'; sel.dispatchEvent(new Event('change')); return true;
			}
			document.querySelector('#ns-input').value = 'beta';
			document.querySelector('#ns-go').click(); return true;
		})()`)),
		chromedp.WaitVisible(chromedp.CSS(`#ns-current[data-namespace="beta"]`)))
	// A switch from the modules page stays on the modules page.
	step("the modules of beta", chromedp.WaitVisible(chromedp.CSS(`tr.module-row[data-names~="approval"]`)))
	scan("beta", "modules")
	step("the runs of beta", chromedp.Click(chromedp.CSS("#nav-runs")), chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="beta-r1"]`)))
	listed("beta")
	step("the hooks of beta", chromedp.Click(chromedp.CSS("#nav-schedules")), chromedp.WaitVisible(chromedp.CSS(`tr.hook-row[data-hook="beta-hook"]`)))
	if hook := evalAs[[]string](t, bctx, `Array.from(document.querySelectorAll('tr.hook-row td')).map(d => d.textContent)`); len(hook) != 4 || hook[1] != "POST /v1/namespaces/beta/hooks/beta-hook" {
		t.Errorf("beta's hook row %q; want its endpoint POST /v1/namespaces/beta/hooks/beta-hook", hook)
	}
	scan("beta", "schedules")

	// The run every namespace has is each one's own.
	step("beta's run shared", chromedp.Navigate(s.url+"/?ns=beta#/run/shared"), chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="suspended"]`)))
	scan("beta", "run")
	step("acme's run acme-r1 in beta",
		chromedp.Navigate(s.url+"/?ns=beta#/run/acme-r1"),
		chromedp.WaitVisible(chromedp.CSS("#run-not-found")))
	if n := evalAs[int](t, bctx, `document.querySelectorAll('#run-status, #lineage, #timeline').length`); n != 0 {
		t.Errorf("acme's run opened in beta shows %d of its parts; want none", n)
	}
	step("acme's run shared", chromedp.Navigate(s.url+"/?ns=acme#/run/shared"), chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="completed"]`)))
	scan("acme", "run")

	// Without ns in the address the UI acts in the last namespace picked.
	step("the runs without ns", chromedp.Navigate(s.url+"/#/runs"), chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="acme-r1"]`)))
	listed("acme")
}
