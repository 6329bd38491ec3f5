package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Namespace records (NamespaceStore): what a namespace is besides the
// prefix of its ids (store/namespace.go): a description, how long it
// keeps ended runs and its weight in fair shares. DefaultNamespace
// always exists (every backend's migrations insert it) and cannot be
// deleted.

// RetentionDefault is the Retention of a namespace that keeps ended runs
// as long as the server's default says. A Retention of 0 keeps them
// forever; a positive one is the period itself.
const RetentionDefault time.Duration = -1

// MaxNamespaceDescription is the longest namespace description, in bytes.
const MaxNamespaceDescription = 1024

// Namespace weights, for fair shares: MinNamespaceWeight to
// MaxNamespaceWeight, DefaultNamespaceWeight when none is given.
const (
	MinNamespaceWeight     = 1
	MaxNamespaceWeight     = 1000
	DefaultNamespaceWeight = 1
)

// ErrDefaultNamespace is returned (wrapped) by DeleteNamespace of
// DefaultNamespace.
var ErrDefaultNamespace = errors.New("namespace default always exists: it cannot be deleted")

// Namespace is a stored namespace record.
type Namespace struct {
	Name        string
	Description string
	// Retention is how long the namespace keeps ended runs:
	// RetentionDefault (the server's default), 0 (forever) or a period.
	Retention time.Duration
	Weight    int // share of execution slots and task claims; 1 to 1000
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Check reports the first field of n that breaks its rule: the name
// (CheckNamespaceName), the description (a text of at most
// MaxNamespaceDescription bytes), the retention (RetentionDefault, 0 or
// a positive period) and the weight (MinNamespaceWeight to
// MaxNamespaceWeight).
func (n Namespace) Check() error {
	if err := CheckNamespaceName(n.Name); err != nil {
		return err
	}
	if err := CheckText("description", n.Description); err != nil {
		return err
	}
	if len(n.Description) > MaxNamespaceDescription {
		return fmt.Errorf("namespace %s: description is %d bytes: the longest is %d", n.Name, len(n.Description), MaxNamespaceDescription)
	}
	if n.Retention < RetentionDefault {
		return fmt.Errorf("namespace %s: retention %v is negative: give a period, 0 (keep everything) or the server default", n.Name, n.Retention)
	}
	if n.Weight < MinNamespaceWeight || n.Weight > MaxNamespaceWeight {
		return fmt.Errorf("namespace %s: weight %d is not between %d and %d", n.Name, n.Weight, MinNamespaceWeight, MaxNamespaceWeight)
	}
	return nil
}

// NamespaceContents counts what a namespace holds, by kind. BatchJobs
// counts the running ones only: an ended job is a record of what was
// done, and there is no deleting it.
type NamespaceContents struct {
	Runs, Schedules, Hooks, BatchJobs, AttrDecls, Keys int64
}

// Empty reports whether the namespace holds nothing.
func (c NamespaceContents) Empty() bool { return c == NamespaceContents{} }

// String says what c holds: "12 runs and 1 schedule".
func (c NamespaceContents) String() string {
	var parts []string
	add := func(n int64, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(c.Runs, "run", "runs")
	add(c.Schedules, "schedule", "schedules")
	add(c.Hooks, "hook", "hooks")
	add(c.BatchJobs, "batch job", "batch jobs")
	add(c.AttrDecls, "attribute declaration", "attribute declarations")
	add(c.Keys, "API key", "API keys")
	switch len(parts) {
	case 0:
		return "nothing"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// NamespaceInUseError is returned by DeleteNamespace of a namespace that
// holds anything. It wraps ErrConflict.
type NamespaceInUseError struct {
	Namespace string
	Holds     NamespaceContents
}

// Error implements error.
func (e *NamespaceInUseError) Error() string {
	return fmt.Sprintf("namespace %s holds %s: delete them first", e.Namespace, e.Holds)
}

// Unwrap makes the error an ErrConflict.
func (e *NamespaceInUseError) Unwrap() error { return ErrConflict }

// NamespaceStore keeps namespace records. Every method is safe for
// concurrent use.
type NamespaceStore interface {
	// CreateNamespace stores a new namespace (n.Check) with CreatedAt and
	// UpdatedAt now when zero, and returns it as stored; ErrConflict when
	// one of that name exists.
	CreateNamespace(ctx context.Context, n Namespace) (Namespace, error)
	// Namespace returns one namespace, or ErrNotFound.
	Namespace(ctx context.Context, name string) (Namespace, error)
	// Namespaces lists every namespace by name.
	Namespaces(ctx context.Context) ([]Namespace, error)
	// UpdateNamespace replaces the description, retention and weight of
	// namespace n.Name (n.Check), sets its UpdatedAt to n.UpdatedAt (now
	// when zero) and returns it as stored; ErrNotFound when there is none.
	UpdateNamespace(ctx context.Context, n Namespace) (Namespace, error)
	// DeleteNamespace deletes a namespace that holds nothing: no run,
	// module name, schedule, hook, running batch job or attribute
	// declaration (their ids and names start with NamespacePrefix(name),
	// or attr_decls.namespace is name). It fails with a
	// *NamespaceInUseError when it holds anything, with
	// ErrDefaultNamespace for DefaultNamespace and with ErrNotFound when
	// there is no such namespace.
	DeleteNamespace(ctx context.Context, name string) error
}

// ForCreate returns n as CreateNamespace stores it: a zero CreatedAt
// becomes now, a zero UpdatedAt CreatedAt (both to the nanosecond,
// without a monotonic reading). Every backend calls it, so they agree.
func (n Namespace) ForCreate(now time.Time) Namespace {
	if n.CreatedAt.IsZero() {
		n.CreatedAt = now
	}
	n.CreatedAt = time.Unix(0, n.CreatedAt.UnixNano())
	if n.UpdatedAt.IsZero() {
		n.UpdatedAt = n.CreatedAt
	}
	n.UpdatedAt = time.Unix(0, n.UpdatedAt.UnixNano())
	return n
}

// CheckDeletable returns ErrDefaultNamespace (wrapped) for
// DefaultNamespace: the check every backend's DeleteNamespace makes
// first.
func CheckDeletable(name string) error {
	if name == DefaultNamespace || name == "" {
		return fmt.Errorf("delete namespace %q: %w", name, ErrDefaultNamespace)
	}
	return nil
}
