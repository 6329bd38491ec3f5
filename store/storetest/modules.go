package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// The module cases of the suite, and helpers the other cases share.

// ts is a fixed timestamp with microsecond precision, the finest every
// backend keeps.
func ts(sec int64) time.Time {
	return time.Unix(1_700_000_000+sec, 123_456_000)
}

func testModule(name string, n byte) store.Module {
	return store.Module{
		Hash:       fmt.Sprintf("%064x", n),
		Name:       name,
		Bytes:      append([]byte{0, 'a', 's', 'm', n}, make([]byte, 100*int(n))...),
		ABIVersion: 3,
		Workflows:  []string{"alpha", "beta"},
		CreatedAt:  ts(int64(n)),
	}
}

func mustPutModule(t *testing.T, s store.Store, m store.Module) {
	t.Helper()
	if err := s.PutModule(t.Context(), m); err != nil {
		t.Fatalf("PutModule(%s): %v", m.Name, err)
	}
}

func mustModule(t *testing.T, s store.Store, hashOrName string) store.Module {
	t.Helper()
	m, err := s.Module(t.Context(), hashOrName)
	if err != nil {
		t.Fatalf("Module(%q): %v", hashOrName, err)
	}
	return m
}

func checkModule(t *testing.T, got, want store.Module, withBytes bool) {
	t.Helper()
	if got.Hash != want.Hash || got.Name != want.Name || got.ABIVersion != want.ABIVersion ||
		!slices.Equal(got.Workflows, want.Workflows) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("module = %+v, want %+v", got, want)
	}
	if withBytes && !bytes.Equal(got.Bytes, want.Bytes) {
		t.Errorf("module bytes = %q, want %q", got.Bytes, want.Bytes)
	}
	if !withBytes && got.Bytes != nil {
		t.Errorf("module bytes = %q, want nil (listed without bytes)", got.Bytes)
	}
	if got.Size != int64(len(want.Bytes)) {
		t.Errorf("module %s: Size = %d, want %d (its length, with or without the bytes)", got.Name, got.Size, len(want.Bytes))
	}
}

func testModulePutGet(t *testing.T, s store.Store) {
	m := testModule("greeter", 1)
	mustPutModule(t, s, m)
	checkModule(t, mustModule(t, s, m.Hash), m, true)
	checkModule(t, mustModule(t, s, "greeter"), m, true)
	for _, key := range []string{m.Hash, "greeter"} {
		info, err := s.ModuleInfo(t.Context(), key)
		if err != nil {
			t.Fatalf("ModuleInfo(%q): %v", key, err)
		}
		checkModule(t, info, m, false)
	}

	// No name, no workflows.
	m2 := testModule("", 2)
	m2.Workflows = nil
	mustPutModule(t, s, m2)
	got := mustModule(t, s, m2.Hash)
	if len(got.Workflows) != 0 {
		t.Errorf("workflows = %q, want none", got.Workflows)
	}
	got.Workflows = nil
	checkModule(t, got, m2, true)
}

func testModuleIdempotentPut(t *testing.T, s store.Store) {
	m := testModule("greeter", 1)
	mustPutModule(t, s, m)

	again := m
	again.Name = ""
	again.ABIVersion = 99
	again.CreatedAt = ts(100)
	mustPutModule(t, s, again)
	checkModule(t, mustModule(t, s, m.Hash), m, true) // first record kept, name too

	renamed := m
	renamed.Name = "hello"
	renamed.ABIVersion = 99
	renamed.CreatedAt = ts(100)
	mustPutModule(t, s, renamed)
	want := m
	want.Name = "hello" // the name last stored; the first one stays
	checkModule(t, mustModule(t, s, m.Hash), want, true)
	checkModule(t, mustModule(t, s, "hello"), want, true)
	checkModule(t, mustModule(t, s, "greeter"), want, true)
	checkNames(t, mustModule(t, s, m.Hash), "greeter", "hello")

	ms, err := s.Modules(t.Context())
	if err != nil {
		t.Fatalf("Modules: %v", err)
	}
	if len(ms) != 1 {
		t.Errorf("Modules: got %d modules, want 1", len(ms))
	}
}

func testModuleByNameMostRecent(t *testing.T, s store.Store) {
	v1 := testModule("app", 1)
	v2 := testModule("app", 2)
	mustPutModule(t, s, v1)
	mustPutModule(t, s, v2)
	if got := mustModule(t, s, "app"); got.Hash != v2.Hash {
		t.Errorf("Module(app) = %s, want v2 %s", got.Hash, v2.Hash)
	}
	// Storing v1 again under the name (a rollback) makes it the most recent.
	mustPutModule(t, s, v1)
	if got := mustModule(t, s, "app"); got.Hash != v1.Hash {
		t.Errorf("after re-put, Module(app) = %s, want v1 %s", got.Hash, v1.Hash)
	}
	// A hash wins over a name.
	other := testModule(v2.Hash, 3)
	mustPutModule(t, s, other)
	if got := mustModule(t, s, v2.Hash); got.Hash != v2.Hash {
		t.Errorf("Module(v2 hash) = %s, want %s", got.Hash, v2.Hash)
	}
}

// checkNames checks the names a module carries.
func checkNames(t *testing.T, m store.Module, want ...string) {
	t.Helper()
	if !slices.Equal(m.Names, want) {
		t.Errorf("module %s: Names = %q, want %q", m.Hash[:8], m.Names, want)
	}
}

// testModuleNames: a module carries every name it was stored under until
// another module is stored under one of them; that one name moves, the
// others stay.
func testModuleNames(t *testing.T, s store.Store) {
	v1, v2 := testModule("prod", 1), testModule("staging", 2)
	mustPutModule(t, s, v1)
	v1.Name = "staging" // the same bytes under a second name
	mustPutModule(t, s, v1)
	for _, name := range []string{"prod", "staging"} {
		if got := mustModule(t, s, name); got.Hash != v1.Hash || got.Name != "staging" {
			t.Errorf("Module(%s) = %s named %q; want %s, named staging (the name last stored)", name, got.Hash[:8], got.Name, v1.Hash[:8])
		}
	}
	checkNames(t, mustModule(t, s, v1.Hash), "prod", "staging")

	mustPutModule(t, s, v2) // other bytes under staging: only staging moves
	if got := mustModule(t, s, "prod"); got.Hash != v1.Hash || got.Name != "prod" {
		t.Errorf("after staging moved, Module(prod) = %s named %q; want %s named prod", got.Hash[:8], got.Name, v1.Hash[:8])
	}
	if got := mustModule(t, s, "staging"); got.Hash != v2.Hash {
		t.Errorf("Module(staging) = %s; want v2 %s", got.Hash[:8], v2.Hash[:8])
	}
	info, err := s.ModuleInfo(t.Context(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	checkNames(t, info, "prod")
	checkNames(t, mustModule(t, s, v2.Hash), "staging")
	if got := mustModule(t, s, v1.Hash).DeployedNames; !slices.Equal(got, []string{"prod", "staging"}) {
		t.Errorf("v1: DeployedNames = %q; want [prod staging]: the names it was stored under, staging too", got)
	}
	mustPutModule(t, s, v1) // v1 again under staging (a rollback): staging moves back
	if got := mustModule(t, s, "staging"); got.Hash != v1.Hash || !slices.Equal(got.Names, []string{"prod", "staging"}) {
		t.Errorf("after a rollback of staging, Module(staging) = %s %q; want v1 [prod staging]", got.Hash[:8], got.Names)
	}
	if got := mustModule(t, s, v2.Hash); got.Names != nil || !slices.Equal(got.DeployedNames, []string{"staging"}) || got.Name != "" {
		t.Errorf("v2 after the rollback: Name %q, Names %q, DeployedNames %q; want none, none, [staging]", got.Name, got.Names, got.DeployedNames)
	}
	mustPutModule(t, s, v2) // and forward again, for the listing below

	mustPutModule(t, s, testModule("", 3)) // no name: names nothing
	ms, err := s.Modules(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, m := range ms {
		got[m.Hash[62:]] = m.Names
	}
	if len(ms) != 3 || !slices.Equal(got["01"], []string{"prod"}) || !slices.Equal(got["02"], []string{"staging"}) || got["03"] != nil {
		t.Errorf("Modules' names = %q; want 01 [prod], 02 [staging], 03 none", got)
	}
}

func testModulesList(t *testing.T, s store.Store) {
	ms0, err := s.Modules(t.Context())
	if err != nil {
		t.Fatalf("Modules on empty store: %v", err)
	}
	if len(ms0) != 0 {
		t.Fatalf("Modules on empty store = %d modules", len(ms0))
	}
	a, b, c := testModule("a", 1), testModule("b", 2), testModule("", 3)
	for _, m := range []store.Module{b, c, a} {
		mustPutModule(t, s, m)
	}
	ms, err := s.Modules(t.Context())
	if err != nil {
		t.Fatalf("Modules: %v", err)
	}
	want := []store.Module{c, b, a} // newest CreatedAt first
	if len(ms) != len(want) {
		t.Fatalf("Modules: got %d, want %d", len(ms), len(want))
	}
	for i := range want {
		checkModule(t, ms[i], want[i], false)
	}
}

func testModuleNotFound(t *testing.T, s store.Store) {
	mustPutModule(t, s, testModule("x", 1))
	for _, key := range []string{"nope", fmt.Sprintf("%064x", 9), ""} {
		if _, err := s.Module(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Module(%q) error = %v, want ErrNotFound", key, err)
		}
		if _, err := s.ModuleInfo(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ModuleInfo(%q) error = %v, want ErrNotFound", key, err)
		}
	}
}
