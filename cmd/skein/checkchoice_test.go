package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// A step named after the winner of a Select passes skein check (exit 0),
// the report naming the choice that makes its key's op differ.
func TestCheckSelectChoice(t *testing.T) {
	t.Parallel()
	wasm := wasmbuild.Build(t, "./testdata/workflows/choice")
	r := skein(t, "", "check", wasm, "--workflow", "pick", "--schedules", "40", "--quiet")
	if r.code != 0 || !strings.Contains(r.stdout, "ids schedule-independent up to recorded choices (1 keys follow a Select)") ||
		!strings.Contains(r.stdout, `id follows a recorded choice: key "3" is step "after_`) ||
		!strings.Contains(r.stdout, `after select 1 of task root chose "`) {
		t.Fatalf("want exit 0 and the choice named:\n%s", r)
	}
	r = skein(t, "", "check", wasm, "--workflow", "pick_in_task", "--schedules", "40", "--json")
	var rep struct {
		OK              bool `json:"ok"`
		ChoiceDependent []struct {
			Key    string
			Choice struct {
				Task   string
				Select int
				A, B   string
			}
		} `json:"choice_dependent"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("%v\n%s", err, r)
	}
	if c := rep.ChoiceDependent; !rep.OK || len(c) != 1 || c[0].Key != "2" || c[0].Choice.Task != "t1" || c[0].Choice.Select != 1 || c[0].Choice.A == c[0].Choice.B {
		t.Fatalf("report %+v", rep)
	}
}
