package host

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

func ptr[T any](v T) *T { return &v }

// TestNamespaceRecords: create, list, describe, update and delete a
// namespace through the host, with defaults for the fields not given.
func TestNamespaceRecords(t *testing.T) {
	h := newTestHost(t, Config{})
	ctx := t.Context()
	n, err := h.CreateNamespace(ctx, "acme", NamespaceOptions{Description: ptr("the acme team")})
	if err != nil || n.Weight != 1 || n.Retention != store.RetentionDefault || n.Description != "the acme team" {
		t.Fatalf("CreateNamespace(acme) = %+v, %v; want weight 1, the server's retention", n, err)
	}
	if _, err := h.CreateNamespace(ctx, "acme", NamespaceOptions{}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateNamespace(acme) again: err = %v, want ErrConflict", err)
	}
	n, err = h.UpdateNamespace(ctx, "acme", NamespaceOptions{Retention: ptr(72 * time.Hour), Weight: ptr(5)})
	if err != nil || n.Weight != 5 || n.Retention != 72*time.Hour || n.Description != "the acme team" {
		t.Fatalf("UpdateNamespace(acme) = %+v, %v; want weight 5, retention 72h, the description kept", n, err)
	}
	if got, err := h.Namespace(ctx, "acme"); err != nil || got != n {
		t.Errorf("Namespace(acme) = %+v, %v; want %+v", got, err, n)
	}
	list, err := h.Namespaces(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "acme" || list[1].Name != store.DefaultNamespace {
		t.Fatalf("Namespaces = %+v, %v; want acme, default", list, err)
	}
	if err := h.DeleteNamespace(ctx, "acme"); err != nil {
		t.Fatalf("DeleteNamespace(acme): %v", err)
	}
	if _, err := h.Namespace(ctx, "acme"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Namespace(acme) after its delete: err = %v, want ErrNotFound", err)
	}
}

// TestNamespaceInvalid: names and values that break a rule are
// ErrInvalid, the message naming the rule; default is not deleted.
func TestNamespaceInvalid(t *testing.T) {
	h := newTestHost(t, Config{})
	ctx := t.Context()
	for rule, o := range map[string]struct {
		name string
		o    NamespaceOptions
	}{
		"does not start with a letter":       {"1acme", NamespaceOptions{}},
		"is longer than 64 bytes":            {strings.Repeat("a", 65), NamespaceOptions{}},
		"weight 0 is not between 1 and 1000": {"acme", NamespaceOptions{Weight: ptr(0)}},
		"is negative":                        {"acme", NamespaceOptions{Retention: ptr(-time.Hour)}},
	} {
		if _, err := h.CreateNamespace(ctx, o.name, o.o); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), rule) {
			t.Errorf("CreateNamespace(%.10s, %+v): err = %v, want ErrInvalid saying %q", o.name, o.o, err, rule)
		}
	}
	if _, err := h.UpdateNamespace(ctx, store.DefaultNamespace, NamespaceOptions{Weight: ptr(1001)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("UpdateNamespace(default, weight 1001): err = %v, want ErrInvalid", err)
	}
	if err := h.DeleteNamespace(ctx, store.DefaultNamespace); !errors.Is(err, store.ErrDefaultNamespace) ||
		!strings.Contains(err.Error(), "cannot be deleted") {
		t.Errorf("DeleteNamespace(default): err = %v, want ErrDefaultNamespace", err)
	}
	if err := h.DeleteNamespace(ctx, "no/such"); !errors.Is(err, ErrInvalid) {
		t.Errorf("DeleteNamespace(no/such): err = %v, want ErrInvalid", err)
	}
	if err := h.DeleteNamespace(ctx, "nosuch"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteNamespace(nosuch): err = %v, want ErrNotFound", err)
	}
}

// TestNamespaceDeleteInUse: a namespace holding a schedule (stored
// under its qualified name) is not deleted; once the schedule is gone,
// it is.
func TestNamespaceDeleteInUse(t *testing.T) {
	h := newTestHost(t, Config{})
	ctx := t.Context()
	if _, err := h.CreateNamespace(ctx, "acme", NamespaceOptions{}); err != nil {
		t.Fatal(err)
	}
	sc := store.Schedule{Name: store.Qualify("acme", "nightly"), Cron: "@daily", Module: "m", Workflow: "w", Overlap: store.OverlapSkip}
	if _, err := h.st.CreateSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	err := h.DeleteNamespace(ctx, "acme")
	var inUse *store.NamespaceInUseError
	if !errors.As(err, &inUse) || !errors.Is(err, store.ErrConflict) ||
		!strings.Contains(err.Error(), "namespace acme holds 1 schedule: delete them first") {
		t.Fatalf("DeleteNamespace(acme) holding a schedule: err = %v, want a *NamespaceInUseError naming 1 schedule", err)
	}
	if err := h.DeleteSchedule(ctx, sc.Name); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteNamespace(ctx, "acme"); err != nil {
		t.Errorf("DeleteNamespace(acme) once empty: %v", err)
	}
}
