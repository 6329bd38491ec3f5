package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Role is what a principal may do (roles.go says which routes each may
// call): read < run < deploy < admin < root, and worker apart.
type Role string

// The roles, as host.KeyRoles.
const (
	RoleRead   Role = host.RoleRead
	RoleRun    Role = host.RoleRun
	RoleDeploy Role = host.RoleDeploy
	RoleWorker Role = host.RoleWorker
	RoleAdmin  Role = host.RoleAdmin
	RoleRoot   Role = host.RoleRoot
)

// NamespaceHeader names the namespace a root principal acts in.
const NamespaceHeader = "X-Skein-Namespace"

// Principal is who a request acts as, set by the guard (guard.go): the
// key its bearer is the secret of, or root for --token and for a server
// that has neither a token nor keys. A public route (a webhook delivery)
// has none: its Role is empty.
type Principal struct {
	KeyID, Name string // empty for --token and for the open dev server
	Namespace   string // the key's; empty for root
	Role        Role
	Activities  []string // a worker key's granted activity names; empty: all
}

type principalKey struct{}

// withPrincipal returns r with p and its route's pattern in its context.
func withPrincipal(r *http.Request, p Principal, pattern string) *http.Request {
	ctx := context.WithValue(r.Context(), principalKey{}, p)
	return r.WithContext(context.WithValue(ctx, routeKey{}, pattern))
}

// principalOf returns the principal the guard set on r: the zero
// Principal (no role, allowed nothing) when it set none.
func principalOf(r *http.Request) Principal {
	return principalFrom(r.Context())
}

func principalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// NamespaceFor returns the namespace request r acts in: for a root
// principal the one its X-Skein-Namespace header names (default
// "default"); for any other its key's, and a header naming another is a
// 403.
func (p Principal) NamespaceFor(r *http.Request) (string, error) {
	want := r.Header.Get(NamespaceHeader)
	switch {
	case p.Role == RoleRoot:
		if want == "" {
			return store.DefaultNamespace, nil
		}
		if err := store.CheckNamespaceName(want); err != nil {
			return "", badRequest("%s: %v", NamespaceHeader, err)
		}
		return want, nil
	case p.Role == "":
		return "", forbidden("%s %s: the request has no principal (a public route acts in no namespace of its own)", r.Method, r.URL.Path)
	case want != "" && want != p.Namespace:
		return "", forbidden("%s names namespace %q, but key %s acts in namespace %q only: only a root key chooses its namespace",
			NamespaceHeader, want, p.KeyID, p.Namespace)
	}
	return p.Namespace, nil
}

// routeKey holds, in a request's context, the pattern of its route.
type routeKey struct{}

// mayClaim checks that a worker principal is granted every activity
// name of a claim (a name may be qualified: its local part counts). The
// refusal is a 403; on the worker stream it ends the stream with a
// forbidden frame (isForbidden).
func (p Principal) mayClaim(_ context.Context, names []string) error {
	return p.claimGrant(names)
}

// isForbidden reports whether err is a 403's.
func isForbidden(err error) bool {
	var re *requestError
	return errors.As(err, &re) && re.status == http.StatusForbidden
}

func (p Principal) claimGrant(names []string) error {
	if p.Role != RoleWorker || len(p.Activities) == 0 {
		return nil
	}
	for _, n := range names {
		_, local := store.SplitQualified(n)
		if !slices.Contains(p.Activities, local) {
			return forbidden("key %s may claim tasks of activities %v only, not %q", p.KeyID, p.Activities, local)
		}
	}
	if len(names) == 0 {
		return forbidden("key %s may claim tasks of activities %v only: name them", p.KeyID, p.Activities)
	}
	return nil
}

func forbidden(format string, args ...any) error {
	return &requestError{status: http.StatusForbidden, code: CodeForbidden, msg: fmt.Sprintf(format, args...)}
}

// grantedClient is the host's client with the claims of a worker key
// held to its granted activity names (the principal in the claim's
// context).
type grantedClient struct{ host.Client }

func (g grantedClient) ClaimTasks(ctx context.Context, o host.ClaimOptions) ([]store.Task, error) {
	if err := principalFrom(ctx).mayClaim(ctx, o.Names); err != nil {
		return nil, err
	}
	return g.Client.ClaimTasks(ctx, o)
}

// In returns the view of namespace ns with the same hold on claims.
func (g grantedClient) In(ns string) (host.Client, error) {
	v, err := g.Client.In(ns)
	if err != nil {
		return nil, err
	}
	return grantedClient{v}, nil
}
