package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skeinrun/skein/store"
)

// A namespace's view of a host (docs/tenants.md): the Client that the
// API serves a request of namespace ns with. The host keeps a thing's
// namespace in its id or name, qualified (store/namespace.go); the view
// takes local ids and names, qualifies every one it is given, selects
// only ns's records in every list, and returns records with their ids
// and names local again. A local id or name never holds '/', so nothing
// given to the view can name another namespace's record: a record of
// another namespace is not found, as if it did not exist.

// In returns the view of namespace ns of h. The view scopes what it is
// asked; it does not confine code that holds it (In on a view returns
// another namespace's view).
func (h *Host) In(ns string) (Client, error) {
	if err := store.CheckNamespaceName(ns); err != nil {
		return nil, invalid(err)
	}
	return &view{h: h, ns: ns}, nil
}

// view is Host.In's Client.
type view struct {
	h  *Host
	ns string
}

var _ Client = (*view)(nil)

// In returns the view of another namespace of the same host.
func (v *view) In(ns string) (Client, error) { return v.h.In(ns) }

// q qualifies a local id or name given to the view. One that holds '/'
// is no local id: it fails with ErrNotFound for a lookup and ErrInvalid
// for a create (what says which, and names the input).
func (v *view) q(what, local string, create bool) (string, error) {
	if strings.Contains(local, store.NamespaceSep) {
		if create {
			return "", invalidf("%s %q holds '/': ids and names hold no '/' (namespace %s is the request's)", what, local, v.ns)
		}
		return "", fmt.Errorf("%s %q: %w", what, local, ErrNotFound)
	}
	return store.Qualify(v.ns, local), nil
}

// local returns a qualified id or name of ns without its namespace.
func (v *view) local(q string) string {
	if q == "" {
		return ""
	}
	if ns, l := store.SplitQualified(q); ns == v.ns {
		return l
	}
	return q
}

// mine reports whether a qualified id or name is of the view's namespace.
func (v *view) mine(q string) bool { return store.NamespaceOf(q) == v.ns }

// run returns r with its ids local.
func (v *view) run(r store.Run) store.Run {
	r.ID, r.Parent = v.local(r.ID), v.local(r.Parent)
	r.ResetTo, r.ResetFrom = v.local(r.ResetTo), v.local(r.ResetFrom)
	r.Attrs = v.localKeys(r.Attrs)
	return r
}

// runs returns rs with their ids local.
func (v *view) runs(rs []store.Run) []store.Run {
	out := make([]store.Run, len(rs))
	for i, r := range rs {
		out[i] = v.run(r)
	}
	return out
}

// localKeys returns m with its keys (qualified names) local.
func localKeys[T any](v *view, m map[string]T) map[string]T {
	if m == nil {
		return nil
	}
	out := make(map[string]T, len(m))
	for k, x := range m {
		out[v.local(k)] = x
	}
	return out
}

func (v *view) localKeys(m map[string]any) map[string]any { return localKeys(v, m) }

// qualKeys returns m with its keys (local names) qualified.
func (v *view) qualKeys(what string, m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		qk, err := v.q(what, k, true)
		if err != nil {
			return nil, err
		}
		out[qk] = x
	}
	return out, nil
}

// runID qualifies a run id given for a lookup.
func (v *view) runID(id string) (string, error) { return v.q("run", id, false) }

// Deploy stores a module in the namespace (Host.Deploy).
func (v *view) Deploy(ctx context.Context, name string, wasm []byte) (store.Module, error) {
	q, err := v.q("module name", name, true)
	if err != nil {
		return store.Module{}, err
	}
	m, err := v.h.Deploy(ctx, v.deployName(q, name), wasm)
	return v.module(m), err
}

// DeployReader is Deploy for a module read from r (Host.DeployReader).
func (v *view) DeployReader(ctx context.Context, name string, r io.Reader, size int64) (store.Module, error) {
	q, err := v.q("module name", name, true)
	if err != nil {
		return store.Module{}, err
	}
	m, err := v.h.DeployReader(ctx, v.deployName(q, name), r, size)
	return v.module(m), err
}

// deployName is what Host.Deploy takes for local name (qualified q):
// "NS/" for an unnamed module of a namespace other than default.
func (v *view) deployName(q, name string) string {
	if name == "" {
		return store.NamespacePrefix(v.ns)
	}
	return q
}

// module returns m as the namespace sees it: only its own names, local,
// and not which other namespaces own it.
func (v *view) module(m store.Module) store.Module {
	if m.Hash == "" {
		return m
	}
	m.Name = v.localName(m.Name)
	m.Names = v.localNames(m.Names)
	m.DeployedNames = v.localNames(m.DeployedNames)
	m.Namespace, m.Namespaces = "", nil
	return m
}

// localName is a qualified name of the namespace made local, "" for
// another namespace's.
func (v *view) localName(q string) string {
	if q == "" || !v.mine(q) {
		return ""
	}
	return v.local(q)
}

// localNames keeps the names of the namespace, local.
func (v *view) localNames(qs []string) []string {
	var out []string
	for _, q := range qs {
		if v.mine(q) {
			out = append(out, v.local(q))
		}
	}
	return out
}

// Module returns a module of the namespace by local name or hash; a
// module the namespace does not own is not found.
func (v *view) Module(ctx context.Context, ref string) (store.Module, error) {
	m, err := v.ownModule(ctx, ref)
	if err != nil {
		return store.Module{}, err
	}
	return v.module(m), nil
}

// ownModule finds ref as a name of the namespace or, when it is written
// as a hash, as a module the namespace owns; with its qualified names.
func (v *view) ownModule(ctx context.Context, ref string) (store.Module, error) {
	notFound := fmt.Errorf("module %q: %w", ref, ErrNotFound)
	q, err := v.q("module", ref, false)
	if err != nil || ref == "" {
		return store.Module{}, notFound
	}
	m, err := v.h.Module(ctx, q)
	if err == nil && m.OwnedBy(v.ns) && (m.Hash == ref || v.mine(q)) {
		return m, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Module{}, err
	}
	if IsModuleHash(ref) && q != ref {
		if m, err := v.h.Module(ctx, ref); err == nil && m.OwnedBy(v.ns) {
			return m, nil
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.Module{}, err
		}
	}
	return store.Module{}, notFound
}

// moduleRef resolves a module reference given with a start, a schedule
// or a hook: a local name becomes the qualified name (resolved again
// where the host resolves it), a hash stays a hash; either must be the
// namespace's.
func (v *view) moduleRef(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	m, err := v.ownModule(ctx, ref)
	if err != nil {
		return "", err
	}
	if m.Hash == ref {
		return ref, nil
	}
	return store.Qualify(v.ns, ref), nil
}

// Modules lists the modules the namespace owns.
func (v *view) Modules(ctx context.Context) ([]store.Module, error) {
	ms, err := v.h.Modules(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.Module
	for _, m := range ms {
		if m.OwnedBy(v.ns) {
			out = append(out, v.module(m))
		}
	}
	return out, nil
}

// Start starts a run in the namespace (Host.Start); a run id is minted
// when none is given.
func (v *view) Start(ctx context.Context, o StartOptions) (store.Run, error) {
	var err error
	if o.Module, err = v.moduleRef(ctx, o.Module); err != nil {
		return store.Run{}, fmt.Errorf("start: %w", err)
	}
	if o.ID == "" {
		o.ID = randomHex(8)
	}
	if o.ID, err = v.q("run id", o.ID, true); err != nil {
		return store.Run{}, fmt.Errorf("start: %w", err)
	}
	if o.Attributes, err = v.qualKeys("attribute", o.Attributes); err != nil {
		return store.Run{}, fmt.Errorf("start: %w", err)
	}
	r, err := v.h.Start(ctx, o)
	return v.run(r), err
}

// Resolve settles a promise of a run of the namespace by its full id.
func (v *view) Resolve(ctx context.Context, fullID string, value json.RawMessage, errMsg string) error {
	root, _, _ := strings.Cut(fullID, ".")
	if _, err := v.runID(root); err != nil {
		return fmt.Errorf("resolve %q: %w", fullID, err)
	}
	return v.h.Resolve(ctx, store.Qualify(v.ns, fullID), value, errMsg)
}

// onRun calls f with the qualified id of a run of the namespace and
// returns its run local.
func (v *view) onRun(id string, f func(q string) (store.Run, error)) (store.Run, error) {
	q, err := v.runID(id)
	if err != nil {
		return store.Run{}, err
	}
	r, err := f(q)
	return v.run(r), err
}

// Cancel requests a run's cancellation (Host.Cancel).
func (v *view) Cancel(ctx context.Context, runID, reason string) (store.Run, error) {
	return v.onRun(runID, func(q string) (store.Run, error) { return v.h.Cancel(ctx, q, reason) })
}

// Pause holds a run (Host.Pause).
func (v *view) Pause(ctx context.Context, runID, by, reason string) (store.Run, error) {
	return v.onRun(runID, func(q string) (store.Run, error) { return v.h.Pause(ctx, q, by, reason) })
}

// Unpause lets a held run go on (Host.Unpause).
func (v *view) Unpause(ctx context.Context, runID string) (store.Run, error) {
	return v.onRun(runID, func(q string) (store.Run, error) { return v.h.Unpause(ctx, q) })
}

// ResumeOn moves a run to another module of the namespace (Host.ResumeOn).
func (v *view) ResumeOn(ctx context.Context, runID, module string) (store.Run, error) {
	ref, err := v.moduleRef(ctx, module)
	if err != nil {
		return store.Run{}, fmt.Errorf("resume %s: %w", runID, err)
	}
	return v.onRun(runID, func(q string) (store.Run, error) { return v.h.ResumeOn(ctx, q, ref) })
}

// Reset makes a new run of the namespace from a prefix of a run's
// journal (Host.Reset).
func (v *view) Reset(ctx context.Context, o ResetOptions) (store.Run, error) {
	var err error
	if o.Module, err = v.moduleRef(ctx, o.Module); err != nil {
		return store.Run{}, fmt.Errorf("reset %s: %w", o.RunID, err)
	}
	if o.NewID != "" {
		if o.NewID, err = v.q("run id", o.NewID, true); err != nil {
			return store.Run{}, fmt.Errorf("reset %s: %w", o.RunID, err)
		}
	}
	return v.onRun(o.RunID, func(q string) (store.Run, error) {
		o.RunID = q
		return v.h.Reset(ctx, o)
	})
}

// Await waits for a run's end (Host.Await).
func (v *view) Await(ctx context.Context, runID string) (store.Run, error) {
	return v.onRun(runID, func(q string) (store.Run, error) { return v.h.Await(ctx, q) })
}

// Inspect returns a run and its journal (Host.Inspect).
func (v *view) Inspect(ctx context.Context, runID string) (store.Run, []Outcome, error) {
	q, err := v.runID(runID)
	if err != nil {
		return store.Run{}, nil, err
	}
	r, outs, err := v.h.Inspect(ctx, q)
	return v.run(r), outs, err
}

// Run returns a run of the namespace.
func (v *view) Run(ctx context.Context, id string) (store.Run, error) {
	return v.onRun(id, func(q string) (store.Run, error) { return v.h.Run(ctx, q) })
}

// Runs lists the namespace's runs selected by f, whose ids and names are
// local.
func (v *view) Runs(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	f, err := v.scope(f)
	if err != nil {
		return nil, err
	}
	rs, err := v.h.Runs(ctx, f)
	return v.runs(rs), err
}

// LeaseHistory returns a run's claims (Host.LeaseHistory).
func (v *view) LeaseHistory(ctx context.Context, id string) ([]store.LeaseRecord, error) {
	q, err := v.runID(id)
	if err != nil {
		return nil, err
	}
	ls, err := v.h.LeaseHistory(ctx, q)
	for i := range ls {
		ls[i].RunID = v.local(ls[i].RunID)
	}
	return ls, err
}

// Attempts returns a run's attempts (Host.Attempts).
func (v *view) Attempts(ctx context.Context, runID string) ([]store.Attempt, error) {
	q, err := v.runID(runID)
	if err != nil {
		return nil, err
	}
	return v.h.Attempts(ctx, q)
}

// Subscribe returns a subscription to the events of the namespace's runs,
// with local run ids.
func (v *view) Subscribe(o SubscribeOptions) *Subscription {
	if o.RunID != "" {
		if q, err := v.runID(o.RunID); err == nil {
			o.RunID = q
		} else {
			o.RunID = store.Qualify(v.ns, "/") // no run has this id
		}
	}
	o.namespace = v.ns
	return v.h.Subscribe(o)
}

// WriteMetrics writes the namespace's series (MetricsGatherer).
func (v *view) WriteMetrics(ctx context.Context, w io.Writer) error {
	return encodeMetrics(v.MetricsGatherer(ctx), w)
}

// MetricsGatherer gathers the namespace's series only
// (NamespaceGatherer).
func (v *view) MetricsGatherer(ctx context.Context) prometheus.Gatherer {
	return NamespaceGatherer(v.h.MetricsGatherer(ctx), v.ns)
}

// NewLimitError is the host's (Host.NewLimitError).
func (v *view) NewLimitError(what, limit, value string) *LimitError {
	return v.h.NewLimitError(what, limit, value)
}

// DeleteRun deletes an ended run of the namespace (Host.DeleteRun).
func (v *view) DeleteRun(ctx context.Context, id string) error {
	q, err := v.runID(id)
	if err != nil {
		return err
	}
	return v.h.DeleteRun(ctx, q)
}

// Prune deletes the namespace's runs that ended before before
// (Host.Prune).
func (v *view) Prune(ctx context.Context, before time.Time, dryRun bool) (PruneReport, error) {
	rep, err := v.h.prune(ctx, v.ns, before, dryRun)
	for i, id := range rep.IDs {
		rep.IDs[i] = v.local(id)
	}
	return rep, err
}
