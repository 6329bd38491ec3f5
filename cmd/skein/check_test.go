package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/testgroup"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// skein check passes on every example (with an input that exercises it),
// printing the one-line summary and exiting 0.
func TestCheckExamples(t *testing.T) {
	t.Parallel()
	testgroup.Slow(t, "heavy-scenarios", "skein check of every example under 200 schedules (about 17 s)")
	for _, tc := range []struct {
		pkg, workflow, input string
		schedules            string
	}{
		{"race", "race", "null", "200"},
		{"sequence", "sequence", `{"n":8}`, "10"},
		{"provision", "provision_vm", `{"name":"db","size":"large"}`, "30"},
		{"provision", "provision_vm_named", `{"name":"db","size":"large"}`, "30"},
		{"approval", "approval", `{"request":"r"}`, "30"}, // promises settled: ends differ (TestCheckPromises)
		{"saga", "saga", `{"trip":"x","card":"declined"}`, "30"},
		{"fanout", "fanout", `{"n":3}`, "20"},
	} {
		wasm := wasmbuild.Build(t, "./examples/"+tc.pkg)
		r := skein(t, "", "check", wasm, "--workflow", tc.workflow, "--input", tc.input, "--schedules", tc.schedules, "--quiet")
		want := tc.workflow + ": " + tc.schedules + " schedules, "
		clean := " 0 divergences, ids schedule-independent, result schedule-independent"
		if tc.pkg == "approval" {
			clean = " 0 divergences, ids schedule-independent up to recorded choices"
		}
		if r.code != 0 || !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, clean) {
			t.Fatalf("%s", r)
		}
	}
}

// skein check follows a workflow that continues as new: 40 monthly
// cycles of examples/subscription in virtual time are a chain of 4 runs,
// none with a journal of more than 24 records, the state carried from
// each to the next.
func TestCheckSubscription(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./examples/subscription")
	r := skein(t, "", "check", wasm, "--input", `{"customer":"c-42","plan_cents":1200,"cycles":40}`, "--schedules", "3", "--json")
	var rep struct {
		OK             bool   `json:"ok"`
		Summary        string `json:"summary"`
		LongestJournal int    `json:"longest_journal"`
		Chain          []struct {
			ID, Status, Input, Result string
			Journal                   int
		} `json:"chain"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("%v\n%s", err, r)
	}
	var ids []string
	for _, c := range rep.Chain {
		ids = append(ids, c.ID+" "+c.Status)
	}
	if want := []string{"s1 continued", "s1~2 continued", "s1~3 continued", "s1~4 completed"}; !rep.OK || strings.Join(ids, ",") != strings.Join(want, ",") ||
		rep.LongestJournal != 24 || !strings.Contains(rep.Summary, "a chain of 4 runs continued as new (longest journal 24)") {
		t.Fatalf("report: ok %v, chain %q, longest journal %d, summary %q; want %q, 24\n%s", rep.OK, ids, rep.LongestJournal, rep.Summary, want, r)
	}
	if last := rep.Chain[3]; !strings.Contains(last.Input, `"cycle":36`) || !strings.Contains(last.Result, `"cycle":40,"billed_cents":48000,"last_invoice":"c-42-40"`) || last.Journal != 8 {
		t.Errorf("last run of the chain: %+v, want cycles 36 to 40, 48000 billed, 8 records", last)
	}
}

func TestCheckJSONAndReproduction(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./testdata/workflows/timing")
	r := skein(t, "", "check", wasm, "--workflow", "first", "--schedules", "30", "--seed", "5", "--json")
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	var rep struct {
		Workflow  string `json:"workflow"`
		Seed      uint64 `json:"seed"`
		Schedules int    `json:"schedules"`
		Replays   int    `json:"replays"`
		OK        bool   `json:"ok"`
		Ends      []struct {
			Result    string `json:"Result"`
			Schedules []int  `json:"Schedules"`
		} `json:"ends"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if rep.Workflow != "first" || rep.Seed != 5 || rep.Schedules != 30 || !rep.OK || len(rep.Ends) != 2 || rep.Replays < 30 {
		t.Fatalf("report %+v", rep)
	}
	// One schedule alone, from one crash point, ends as it did in the run
	// of all of them.
	k := rep.Ends[1].Schedules[0]
	r = skein(t, "", "check", wasm, "--workflow", "first", "--seed", "5", "--schedule", itoa(k), "--crash-at", "1", "--json")
	var one struct {
		Replays int `json:"replays"`
		Ends    []struct {
			Result string `json:"Result"`
		} `json:"ends"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil || r.code != 0 {
		t.Fatalf("%v\n%s", err, r)
	}
	if one.Replays != 1 || len(one.Ends) != 1 || one.Ends[0].Result != rep.Ends[1].Result {
		t.Fatalf("schedule %d alone: %+v, want end %s", k, one, rep.Ends[1].Result)
	}
}

func TestCheckBadInput(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./testdata/workflows/timing")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check"}, exitUsage, "want exactly one MODULE.wasm"},
		{[]string{"check", wasm, "--input", "{"}, exitUsage, "--input is not valid JSON"},
		{[]string{"check", wasm, "--workflow", "first", "--crash-at", "2"}, exitUsage, "--crash-at needs --schedule"},
		{[]string{"check", wasm}, exitFailed, "registers 2 workflows (first, shared)"},
		{[]string{"check", wasm, "--workflow", "nope"}, exitFailed, `no workflow "nope"`},
		{[]string{"check", wasm, "--activity", "a"}, exitUsage, "want NAME=JSON or NAME=error:TEXT"},
		{[]string{"check", "missing.wasm", "--workflow", "x"}, exitFailed, "missing.wasm"},
	} {
		r := skein(t, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("want exit %d and %q:\n%s", tc.code, tc.want, r)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// skein check settles a workflow's promises: by default in turn with a
// value generated from the promise's type, an error, or not at all (the
// 24 h deadline wins), and says so; --promise fixes the outcome of a key,
// --leave-promises leaves the others pending. Before, every schedule
// ended at the promise, and the code after it was never checked.
func TestCheckPromises(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./examples/approval")
	check := func(args ...string) (string, checkReportJSON) {
		t.Helper()
		r := skein(t, "", append([]string{"check", wasm, "--input", `{"request":"r"}`, "--schedules", "9", "--json"}, args...)...)
		var rep checkReportJSON
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || !rep.OK {
			t.Fatalf("skein check %s: %v\n%s", strings.Join(args, " "), err, r)
		}
		return r.stdout, rep
	}
	_, rep := check()
	ends := map[string]bool{}
	for _, e := range rep.Ends {
		switch {
		case strings.Contains(e.Result, "approved by"), strings.Contains(e.Result, "rejected by"):
			ends["decided"] = true
		case strings.Contains(e.Result, "expired"):
			ends["expired"] = true
		case e.Status == "failed":
			ends["error"] = true
		}
	}
	hows := map[string]bool{}
	for _, p := range rep.Promises {
		hows[p.Key+": "+p.How] = true
	}
	if len(ends) != 3 || !hows["decision: a value generated from its schema"] || !hows["decision: error"] || !hows["decision: left pending"] {
		t.Fatalf("ends %+v, promises %+v; want a decision, an error and the deadline", rep.Ends, rep.Promises)
	}
	_, rep = check("--promise", `decision={"approved":true,"by":"ana"}`)
	if len(rep.Ends) != 1 || rep.Ends[0].Result != `"ticket:r approved by ana"` {
		t.Errorf("--promise with a value: ends %+v", rep.Ends)
	}
	_, rep = check("--promise", "decision=error:not now")
	if len(rep.Ends) != 1 || rep.Ends[0].Status != "failed" || rep.Ends[0].Error != "not now" {
		t.Errorf("--promise with an error: ends %+v", rep.Ends)
	}
	_, rep = check("--leave-promises")
	if len(rep.Ends) != 1 || rep.Ends[0].Result != `"ticket:r expired after 24h0m0s"` {
		t.Errorf("--leave-promises: ends %+v", rep.Ends)
	}
	r := skein(t, "", "check", wasm, "--promise", "decision={nope", "--quiet")
	wantExit(t, r, exitUsage, "the value of promise decision is not valid JSON")
}

// checkReportJSON is the part of skein check --json the tests read.
type checkReportJSON struct {
	OK          bool   `json:"ok"`
	Summary     string `json:"summary"`
	Replays     int    `json:"replays"`
	CrashPoints int    `json:"crash_points"`
	Sampled     bool   `json:"sampled"`
	Ends        []struct {
		Status, Result, Error string
	} `json:"ends"`
	Promises []struct {
		Key, How string
	} `json:"promises"`
}

// skein check of a workflow whose crash points do not fit --budget
// replays a sample, and its summary and report say how many.
func TestCheckBudget(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./testdata/workflows/fanout200")
	r := skein(t, "", "check", wasm, "--input", `{"n":20}`, "--schedules", "4", "--budget", "1ms", "--json")
	var rep checkReportJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("%v\n%s", err, r)
	}
	if !rep.OK || !rep.Sampled || rep.CrashPoints != 4*41 || rep.Replays != 8 || !strings.Contains(rep.Summary, "sampled to fit the budget of 1ms") {
		t.Errorf("report %+v; want 8 of 164 crash points, sampled", rep)
	}
	r = skein(t, "", "check", wasm, "--input", `{"n":5}`, "--schedules", "2", "--budget", "0", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Sampled || rep.Replays != rep.CrashPoints {
		t.Errorf("--budget 0: %+v, %v; want every crash point", rep, err)
	}
}
