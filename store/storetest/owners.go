package storetest

import (
	"slices"
	"testing"

	"github.com/skeinrun/skein/store"
)

// testModuleOwners: a module is owned by every namespace that stored it,
// by its name's namespace or its Namespace; the bytes are stored once.
func testModuleOwners(t *testing.T, s store.Store) {
	m := testModule("acme/order", 7)
	mustPutModule(t, s, m)
	if got := mustModule(t, s, m.Hash).Namespaces; !slices.Equal(got, []string{"acme"}) {
		t.Errorf("stored as acme/order: Namespaces = %q; want [acme]", got)
	}
	m.Name, m.Namespace = "", "beta" // the same bytes, unnamed, in namespace beta
	mustPutModule(t, s, m)
	m.Name, m.Namespace = "order", "" // and under a bare name: namespace default
	mustPutModule(t, s, m)
	got := mustModule(t, s, "acme/order")
	if !slices.Equal(got.Namespaces, []string{"acme", "beta", "default"}) || !got.OwnedBy("beta") || got.OwnedBy("gamma") {
		t.Errorf("Namespaces = %q; want [acme beta default]", got.Namespaces)
	}
	if got.Namespace != "" {
		t.Errorf("a read module's Namespace = %q; want empty (reads set Namespaces)", got.Namespace)
	}
	ms, err := s.Modules(t.Context())
	if err != nil || len(ms) != 1 || !slices.Equal(ms[0].Namespaces, got.Namespaces) {
		t.Errorf("Modules = %v, %v; want the one module with its three namespaces", ms, err)
	}
}

// testRunsNamespace: RunFilter.Namespace selects the runs whose ids are
// qualified by that namespace, and for namespace default those whose ids
// hold no '/'; schedule and hook conditions qualify the same way.
func testRunsNamespace(t *testing.T, s store.Store) {
	for _, id := range []string{"r1", "r1.1", "acme/r1", "acme/r1.1", "acme/sched:n@x", "acmex/r2", "sched:n@x", "b/hook:h:1"} {
		mustCreateRun(t, s, testRun(id))
	}
	for _, c := range []struct {
		f    store.RunSelect
		want []string
	}{
		{store.RunSelect{Namespace: "default"}, []string{"r1", "r1.1", "sched:n@x"}},
		{store.RunSelect{Namespace: "acme"}, []string{"acme/r1", "acme/r1.1", "acme/sched:n@x"}},
		{store.RunSelect{Namespace: "acmex"}, []string{"acmex/r2"}},
		{store.RunSelect{Namespace: "nobody"}, nil},
		{store.RunSelect{Namespace: "acme", Schedule: "acme/n"}, []string{"acme/sched:n@x"}},
		{store.RunSelect{Namespace: "default", Schedule: "n"}, []string{"sched:n@x"}},
		{store.RunSelect{Hook: "b/h"}, []string{"b/hook:h:1"}},
		{store.RunSelect{}, []string{"acme/r1", "acme/r1.1", "acme/sched:n@x", "acmex/r2", "b/hook:h:1", "r1", "r1.1", "sched:n@x"}},
	} {
		rs, err := s.Runs(t.Context(), store.RunFilter{RunSelect: c.f})
		if err != nil {
			t.Fatal(err)
		}
		if got := runIDs(rs); !slices.Equal(got, c.want) {
			t.Errorf("Runs(%+v) = %q; want %q", c.f, got, c.want)
		}
	}
}
