package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// The namespace record cases of the suite (store.NamespaceStore).

func testNamespace(name string) store.Namespace {
	return store.Namespace{Name: name, Description: "the acme team", Retention: 720 * time.Hour, Weight: 3, CreatedAt: ts(1)}
}

// testNamespaces: default exists from the start; a namespace is stored
// as given, listed by name, created once, updated and deleted.
func testNamespaces(t *testing.T, s store.Store) {
	ctx := t.Context()
	def, err := s.Namespace(ctx, store.DefaultNamespace)
	if err != nil || def.Weight != store.DefaultNamespaceWeight || def.Retention != store.RetentionDefault || def.CreatedAt.IsZero() {
		t.Fatalf("Namespace(default) = %+v, %v; want weight 1, the server's retention, a creation time", def, err)
	}
	for _, name := range []string{"beta", "acme"} {
		got, err := s.CreateNamespace(ctx, testNamespace(name))
		if err != nil {
			t.Fatalf("CreateNamespace(%s): %v", name, err)
		}
		if !got.CreatedAt.Equal(ts(1)) || !got.UpdatedAt.Equal(ts(1)) {
			t.Errorf("CreateNamespace(%s) = created %v, updated %v; want both %v", name, got.CreatedAt, got.UpdatedAt, ts(1))
		}
	}
	if _, err := s.CreateNamespace(ctx, testNamespace("acme")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateNamespace of an existing name: err = %v, want ErrConflict", err)
	}
	got, err := s.Namespace(ctx, "acme")
	if want := testNamespace("acme"); err != nil || got.Description != want.Description || got.Retention != want.Retention ||
		got.Weight != want.Weight || !got.CreatedAt.Equal(ts(1)) || !got.UpdatedAt.Equal(ts(1)) {
		t.Errorf("Namespace(acme) = %+v, %v; want %+v", got, err, want)
	}
	if _, err := s.Namespace(ctx, "zz"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Namespace(unknown): err = %v, want ErrNotFound", err)
	}
	list, err := s.Namespaces(ctx)
	if err != nil || len(list) != 3 || list[0].Name != "acme" || list[1].Name != "beta" || list[2].Name != "default" {
		t.Fatalf("Namespaces = %v, %v; want acme, beta, default", list, err)
	}

	up := store.Namespace{Name: "acme", Description: "", Retention: 0, Weight: 1000, UpdatedAt: ts(5)}
	got, err = s.UpdateNamespace(ctx, up)
	if err != nil || got.Description != "" || got.Retention != 0 || got.Weight != 1000 || !got.CreatedAt.Equal(ts(1)) || !got.UpdatedAt.Equal(ts(5)) {
		t.Errorf("UpdateNamespace(acme) = %+v, %v; want no description, retention 0, weight 1000, created ts(1), updated ts(5)", got, err)
	}
	if again, err := s.Namespace(ctx, "acme"); err != nil || again != got {
		t.Errorf("Namespace(acme) after the update = %+v, %v; want %+v", again, err, got)
	}
	up.Name = "zz"
	if _, err := s.UpdateNamespace(ctx, up); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateNamespace(unknown): err = %v, want ErrNotFound", err)
	}

	if err := s.DeleteNamespace(ctx, "beta"); err != nil {
		t.Fatalf("DeleteNamespace(beta): %v", err)
	}
	if _, err := s.Namespace(ctx, "beta"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Namespace(beta) after its delete: err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteNamespace(ctx, "beta"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteNamespace(beta) again: err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteNamespace(ctx, store.DefaultNamespace); !errors.Is(err, store.ErrDefaultNamespace) {
		t.Errorf("DeleteNamespace(default): err = %v, want ErrDefaultNamespace", err)
	}
	if _, err := s.Namespace(ctx, store.DefaultNamespace); err != nil {
		t.Errorf("Namespace(default) after the refused delete: %v", err)
	}
}

// testNamespacesInvalid: a record that breaks a rule is refused, naming
// the rule, and nothing is stored.
func testNamespacesInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	bad := map[string]store.Namespace{
		"does not start with a letter": {Name: "9lives", Weight: 1},
		"a name is made of":            {Name: "a/b", Weight: 1},
		"is empty":                     {Name: "", Weight: 1},
		"weight 0 is not between":      {Name: "w0", Weight: 0},
		"weight 1001 is not between":   {Name: "w1001", Weight: 1001},
		"is negative":                  {Name: "r", Weight: 1, Retention: -2},
		"the longest is":               {Name: "long", Weight: 1, Description: strings.Repeat("x", store.MaxNamespaceDescription+1)},
		"which is not UTF-8":           {Name: "text", Weight: 1, Description: "a\xffb"},
	}
	for rule, n := range bad {
		if _, err := s.CreateNamespace(ctx, n); err == nil || !strings.Contains(err.Error(), rule) {
			t.Errorf("CreateNamespace(%+.60v): err = %v, want one saying %q", n, err, rule)
		}
	}
	if _, err := s.CreateNamespace(ctx, testNamespace("acme")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateNamespace(ctx, store.Namespace{Name: "acme", Weight: 0}); err == nil || !strings.Contains(err.Error(), "weight 0 is not between") {
		t.Errorf("UpdateNamespace(weight 0): err = %v, want the weight's rule", err)
	}
	list, err := s.Namespaces(ctx)
	if err != nil || len(list) != 2 || list[0].Weight != 3 {
		t.Errorf("Namespaces after refused writes = %+v, %v; want acme (weight 3) and default", list, err)
	}
}

// testNamespaceInUse: a namespace that holds runs, module names,
// schedules, hooks or batch jobs is not deleted, and the refusal counts
// them; ids of another namespace, or of default that share its name's
// first bytes, are not counted.
func testNamespaceInUse(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, name := range []string{"acme", "acme-1", "mods"} {
		if _, err := s.CreateNamespace(ctx, testNamespace(name)); err != nil {
			t.Fatal(err)
		}
	}
	ended := func(id string) store.Run {
		r := testRun(id)
		r.Parent, r.Status, r.Result = "", store.RunCompleted, []byte(`1`)
		return r
	}
	for _, id := range []string{"acme/r1", "acme/r2", "acme", "acme0", "acme-1/r", "acmf"} {
		mustCreateRun(t, s, ended(id))
	}
	if _, err := s.CreateSchedule(ctx, testSchedule("acme/nightly")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateHook(ctx, store.Hook{Name: "acme/github", Module: "m", Workflow: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBatchJob(ctx, testBatchJob("acme/b1", 3)); err != nil {
		t.Fatal(err)
	}
	mustPutModule(t, s, testModule("mods/digest", 7))
	mustPutModule(t, s, testModule("acme0", 8))

	err := s.DeleteNamespace(ctx, "acme")
	var inUse *store.NamespaceInUseError
	if !errors.As(err, &inUse) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteNamespace(acme) holding runs: err = %v, want a *NamespaceInUseError (ErrConflict)", err)
	}
	want := store.NamespaceContents{Runs: 2, Schedules: 1, Hooks: 1, BatchJobs: 1}
	if inUse.Holds != want {
		t.Errorf("DeleteNamespace(acme) holds %+v, want %+v", inUse.Holds, want)
	}
	const msg = "namespace acme holds 2 runs, 1 schedule, 1 hook and 1 batch job: delete them first"
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("DeleteNamespace(acme): %q, want it to say %q", err, msg)
	}
	// A namespace's modules do not keep it: it loses them, the bytes
	// stay with the namespaces that own them still.
	digest := testModule("digest", 7)
	digest.Namespace = "acme"
	mustPutModule(t, s, digest)
	if err := s.DeleteNamespace(ctx, "mods"); err != nil {
		t.Errorf("DeleteNamespace(mods) holding a module: %v; want it deleted", err)
	}
	if _, err := s.ModuleInfo(ctx, "mods/digest"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ModuleInfo(mods/digest) after mods went: %v; want the name gone", err)
	}
	if m, err := s.ModuleInfo(ctx, digest.Hash); err != nil || slices.Contains(m.Namespaces, "mods") || !m.OwnedBy("acme") {
		t.Errorf("the module after mods went: %+v, %v; want it kept, owned by acme only", m.Namespaces, err)
	}

	for _, id := range []string{"acme/r1", "acme/r2"} {
		if err := s.DeleteRun(ctx, id); err != nil {
			t.Fatalf("DeleteRun(%s): %v", id, err)
		}
	}
	if err := s.DeleteSchedule(ctx, "acme/nightly"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteHook(ctx, "acme/github"); err != nil {
		t.Fatal(err)
	}
	err = s.DeleteNamespace(ctx, "acme")
	if !errors.As(err, &inUse) || inUse.Holds != (store.NamespaceContents{BatchJobs: 1}) {
		t.Errorf("DeleteNamespace(acme) holding a batch job: err = %v, want a *NamespaceInUseError of 1 batch job", err)
	}
	endBatchJob(t, s, "acme/b1")
	if err := s.DeleteNamespace(ctx, "acme"); err != nil {
		t.Errorf("DeleteNamespace(acme) holding an ended batch job only: %v", err)
	}
	if err := s.DeleteNamespace(ctx, "acme-1"); !errors.As(err, &inUse) || inUse.Holds != (store.NamespaceContents{Runs: 1}) {
		t.Errorf("DeleteNamespace(acme-1): err = %v, want a *NamespaceInUseError of 1 run", err)
	}
}

// endBatchJob claims the one running batch job and saves it done.
func endBatchJob(t *testing.T, s store.Store, id string) {
	t.Helper()
	ctx := t.Context()
	now := ts(10).UnixNano()
	j, ok, err := s.ClaimBatchJob(ctx, "w1", now, time.Minute)
	if err != nil || !ok || j.ID != id {
		t.Fatalf("ClaimBatchJob = %s, %v, %v; want %s", j.ID, ok, err, id)
	}
	j.Status, j.EndedAt = store.BatchDone, now
	if _, err := s.SaveBatchJob(ctx, j, now); err != nil {
		t.Fatalf("SaveBatchJob(%s, done): %v", id, err)
	}
}
