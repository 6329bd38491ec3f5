package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/wasmbuild"
)

// skein check passes on every example (with an input that exercises it),
// printing the one-line summary and exiting 0.
func TestCheckExamples(t *testing.T) {
	for _, tc := range []struct {
		pkg, workflow, input string
		schedules            string
	}{
		{"race", "race", "null", "200"},
		{"sequence", "sequence", `{"n":8}`, "10"},
		{"provision", "provision_vm", `{"name":"db","size":"large"}`, "30"},
		{"provision", "provision_vm_named", `{"name":"db","size":"large"}`, "30"},
		{"approval", "approval", `{"request":"r"}`, "30"},
		{"saga", "saga", `{"trip":"x","card":"declined"}`, "30"},
		{"fanout", "fanout", `{"n":3}`, "20"},
	} {
		wasm := wasmbuild.Build(t, "./examples/"+tc.pkg)
		r := skein(t, "", "check", wasm, "--workflow", tc.workflow, "--input", tc.input, "--schedules", tc.schedules, "--quiet")
		want := tc.workflow + ": " + tc.schedules + " schedules, "
		if r.code != 0 || !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, " 0 divergences, ids schedule-independent, result schedule-independent") {
			t.Fatalf("%s", r)
		}
	}
}

func TestCheckJSONAndReproduction(t *testing.T) {
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
