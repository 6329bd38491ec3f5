package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// TestServeNamespaces: skein namespace create, list, describe, update
// and delete against a real skein serve; bad names and values exit 1
// with the server's 400 naming the rule; default and a namespace that
// holds a schedule are not deleted.
func TestServeNamespaces(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ns.db")
	s := startServer(t, db, nil)

	wantExit(t, s.cli(t, nil, "namespace", "create", "acme", "--description", "the acme team", "--retention", "720h", "--weight", "3"),
		0, "namespace acme created", "retention:   720h0m0s", "weight:      3")
	wantExit(t, s.cli(t, nil, "namespace", "create", "beta"), 0, "retention:   default", "weight:      1")
	r := s.cli(t, nil, "namespace", "list")
	wantExit(t, r, 0, "acme  weight 3  retention 720h0m0s  the acme team", "beta  weight 1  retention default", "default  weight 1")
	if i, j := strings.Index(r.stdout, "acme"), strings.Index(r.stdout, "default"); i < 0 || j < i {
		t.Errorf("namespace list is not by name:\n%s", r.stdout)
	}
	wantExit(t, s.cli(t, nil, "namespace", "update", "acme", "--retention", "forever", "--weight", "7"), 0,
		"namespace acme updated", "description: the acme team", "retention:   forever", "weight:      7")
	r = s.cli(t, nil, "namespace", "describe", "acme", "--json")
	wantExit(t, r, 0)
	var n client.Namespace
	if err := json.Unmarshal([]byte(r.stdout), &n); err != nil || n.Name != "acme" || n.Weight != 7 || n.Retention != "forever" ||
		n.Description != "the acme team" || n.UpdatedAt.Before(n.CreatedAt) {
		t.Errorf("namespace describe acme --json = %+v, %v (%s)", n, err, r.stdout)
	}

	// Refusals, each naming its rule.
	wantExit(t, s.cli(t, nil, "namespace", "create", "9lives"), exitFailed, "400", "does not start with a letter")
	wantExit(t, s.cli(t, nil, "namespace", "create", "a/b"), exitFailed, "400", "a name is made of letters, digits and - _ : @")
	wantExit(t, s.cli(t, nil, "namespace", "create", "acme"), exitFailed, "409", "exists")
	wantExit(t, s.cli(t, nil, "namespace", "create", "w", "--weight", "0"), exitFailed, "400", "weight 0 is not between 1 and 1000")
	wantExit(t, s.cli(t, nil, "namespace", "update", "acme", "--weight", "1001"), exitFailed, "400", "weight 1001 is not between 1 and 1000")
	wantExit(t, s.cli(t, nil, "namespace", "update", "acme", "--retention", "-1h"), exitFailed, "400", `"retention" "-1h" is not "default"`)
	wantExit(t, s.cli(t, nil, "namespace", "update", "acme"), exitUsage, "nothing to update")
	wantExit(t, s.cli(t, nil, "namespace", "describe", "nosuch"), exitFailed, "404", `no namespace "nosuch"`)
	wantExit(t, s.cli(t, nil, "namespace", "delete", "default"), exitFailed, "409", "namespace default always exists: it cannot be deleted")

	// A namespace holding a schedule (stored under its qualified name,
	// through the store: the API qualifies names in a later change).
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sc := store.Schedule{Name: store.Qualify("acme", "nightly"), Cron: "@daily", Module: "m", Workflow: "w", Overlap: store.OverlapSkip, Paused: true}
	if _, err := st.CreateSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	wantExit(t, s.cli(t, nil, "namespace", "delete", "acme"), exitFailed, "409", "namespace acme holds 1 schedule: delete them first")
	if err := st.DeleteSchedule(ctx, sc.Name); err != nil {
		t.Fatal(err)
	}
	wantExit(t, s.cli(t, nil, "namespace", "delete", "acme"), 0, "namespace acme deleted")
	wantExit(t, s.cli(t, nil, "namespace", "describe", "acme"), exitFailed, "404")
	wantExit(t, s.cli(t, nil, "namespace", "delete", "beta"), 0, "namespace beta deleted")
	wantExit(t, s.cli(t, nil, "namespace", "list", "--json"), 0, `"name":"default"`)
}
