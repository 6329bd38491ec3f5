package main

// End-to-end test of module names through a real `skein serve`: a
// module may carry several names, and deploying the same bytes under a
// second name leaves the first one, and the schedules and hooks that
// start runs by it, working.

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestDeploySameBytesUnderTwoNames: the server's module deployed as prod
// then as staging answers under both names; prod's schedule keeps
// starting runs and its hook keeps answering. Other bytes deployed as
// staging move staging only.
func TestDeploySameBytesUnderTwoNames(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir()+"/skein.db", nil, "--poll", "50ms")
	wasm := wasmbuild.Build(t, serverWorkflows)
	wantExit(t, s.cli(t, nil, "deploy", wasm, "--name", "prod"), 0, "module prod deployed")
	wantExit(t, s.cli(t, nil, "schedule", "create", "tick", "--cron", "* * * * * *", "--module", "prod", "--workflow", "echo", "--overlap", "allow"), 0)
	wantExit(t, s.cli(t, nil, "hook", "create", "ping", "--module", "prod", "--workflow", "echo"), 0)

	wantExit(t, s.cli(t, nil, "deploy", wasm, "--name", "staging"), 0, "module staging already deployed (same bytes)", "names: prod, staging")
	deployed := time.Now()
	for _, name := range []string{"prod", "staging"} {
		r := s.call(t, "GET", "/v1/modules/"+name, "", nil)
		if r.status != 200 {
			t.Errorf("GET /v1/modules/%s after deploying the same bytes as staging: %s; want 200", name, r)
			continue
		}
		if m := decodeJSON[apiModule](t, "module "+name, r.body); m.Name != name || !slices.Equal(m.Names, []string{"prod", "staging"}) {
			t.Errorf("GET /v1/modules/%s after deploying the same bytes as staging: %s; want 200 named %s, names [prod staging]", name, r, name)
		}
	}
	wantExit(t, s.cli(t, nil, "modules"), 0, "prod, staging  ")
	if r := deliver(t, s, "ping", "", []byte(`{"n":1}`)); r.status != 201 {
		t.Errorf("a delivery to prod's hook after the second deploy: %s; want 201", r)
	}
	// prod's schedule starts the runs of its slots after the second deploy.
	var late []slotRun
	for end := time.Now().Add(5 * time.Second); len(late) < 2 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		late = late[:0]
		for _, sr := range scheduleRuns(t, s, "tick") {
			if sr.slot.After(deployed) {
				late = append(late, sr)
			}
		}
	}
	if len(late) < 2 {
		t.Errorf("prod's schedule started %d runs in the 5 s after staging was deployed; want a run a second\n%s", len(late), s.stderr.String())
	}

	// Other bytes under staging: staging moves, prod stays.
	other := wasmbuild.Build(t, "./examples/race")
	wantExit(t, s.cli(t, nil, "deploy", other, "--name", "staging"), 0, "module staging deployed")
	prod := decodeJSON[apiModule](t, "prod", s.call(t, "GET", "/v1/modules/prod", "", nil).body)
	staging := decodeJSON[apiModule](t, "staging", s.call(t, "GET", "/v1/modules/staging", "", nil).body)
	if prod.Hash == staging.Hash || !slices.Equal(prod.Names, []string{"prod"}) || !slices.Equal(staging.Names, []string{"staging"}) {
		t.Errorf("after other bytes were deployed as staging: prod %s %q, staging %s %q; want two modules, one name each", prod.Hash[:8], prod.Names, staging.Hash[:8], staging.Names)
	}
	if r := s.cli(t, nil, "modules"); !strings.Contains(r.stdout, "prod  "+prod.Hash[:12]) || !strings.Contains(r.stdout, "staging  "+staging.Hash[:12]) {
		t.Errorf("skein modules:\n%s\nwant prod and staging on their own modules", r.stdout)
	}
}
