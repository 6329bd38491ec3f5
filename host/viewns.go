package host

import (
	"context"
	"fmt"

	"github.com/skeinrun/skein/store"
)

// A namespace's view and the namespace records (namespaces.go): a view
// reads its own namespace's record and no other; creating, changing and
// deleting namespaces is the host's, not a namespace's.

// errServerWide is what a view answers for the host's own operations.
func (v *view) errServerWide(op string) error {
	return invalidf("%s: namespace records are the server's, not namespace %s's: use the host (a root key on the API)", op, v.ns)
}

// CreateNamespace is refused: namespaces are created by the host.
func (v *view) CreateNamespace(context.Context, string, NamespaceOptions) (store.Namespace, error) {
	return store.Namespace{}, v.errServerWide("create namespace")
}

// Namespace returns the view's own namespace; any other is not found.
func (v *view) Namespace(ctx context.Context, name string) (store.Namespace, error) {
	if name != v.ns {
		return store.Namespace{}, fmt.Errorf("namespace %q: %w", name, ErrNotFound)
	}
	return v.h.Namespace(ctx, name)
}

// Namespaces lists the view's own namespace.
func (v *view) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	n, err := v.h.Namespace(ctx, v.ns)
	if err != nil {
		return nil, err
	}
	return []store.Namespace{n}, nil
}

// UpdateNamespace is refused: namespaces are changed by the host.
func (v *view) UpdateNamespace(context.Context, string, NamespaceOptions) (store.Namespace, error) {
	return store.Namespace{}, v.errServerWide("update namespace")
}

// DeleteNamespace is refused: namespaces are deleted by the host.
func (v *view) DeleteNamespace(context.Context, string) error {
	return v.errServerWide("delete namespace")
}
