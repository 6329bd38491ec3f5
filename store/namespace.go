package store

import (
	"errors"
	"fmt"
	"strings"
)

// Namespaces: every module name, run, schedule, webhook, activity task
// and batch belongs to one namespace (docs/tenants.md). The stores keep
// a thing's namespace in its id or name, qualified: "NS/LOCAL" for a
// namespace NS other than DefaultNamespace, and LOCAL alone (no '/') in
// DefaultNamespace. So a database from before namespaces holds namespace
// default unchanged, and everything derived from a run's id (its child
// runs, its ops' ids, its tasks) is in the run's namespace by
// construction. Attribute declarations and API keys carry a namespace
// column instead.

// DefaultNamespace is the namespace of everything stored before
// namespaces existed, and of every request that names none.
const DefaultNamespace = "default"

// MaxNamespaceLen is the longest namespace name.
const MaxNamespaceLen = 64

// NamespaceSep separates a qualified id's namespace from its local part.
// It is outside the alphabet of run ids and names, so a local id never
// holds it.
const NamespaceSep = "/"

// CheckNamespaceName checks a namespace's name: 1 to MaxNamespaceLen
// bytes of letters, digits and - _ : @ (the alphabet of run ids),
// starting with a letter.
func CheckNamespaceName(name string) error {
	switch {
	case name == "":
		return errors.New("namespace name is empty")
	case len(name) > MaxNamespaceLen:
		return fmt.Errorf("namespace name %.20q… is longer than %d bytes", name, MaxNamespaceLen)
	case !('a' <= name[0] && name[0] <= 'z' || 'A' <= name[0] && name[0] <= 'Z'):
		return fmt.Errorf("namespace name %q does not start with a letter", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_:@", c) >= 0) {
			return fmt.Errorf("namespace name %q has %q at byte %d: a name is made of letters, digits and - _ : @", name, name[i:i+1], i)
		}
	}
	return nil
}

// Qualify returns local as stored in namespace ns: "ns/local", or local
// itself in DefaultNamespace (and for an empty ns).
func Qualify(ns, local string) string {
	if ns == "" || ns == DefaultNamespace {
		return local
	}
	return ns + NamespaceSep + local
}

// SplitQualified returns the namespace and the local part of a qualified
// id or name (Qualify's inverse). Only a '/' before any '.' separates a
// namespace: an op's full id "{run}.{key}" may hold a '/' in its key (a
// step's name), and a namespace's name holds no '.'.
func SplitQualified(q string) (ns, local string) {
	i := strings.IndexByte(q, NamespaceSep[0])
	if i < 0 || strings.IndexByte(q[:i], '.') >= 0 {
		return DefaultNamespace, q
	}
	return q[:i], q[i+1:]
}

// NamespaceOf returns the namespace of a qualified id or name.
func NamespaceOf(q string) string {
	ns, _ := SplitQualified(q)
	return ns
}

// NamespacePrefix is how every qualified id or name of namespace ns
// begins: "ns/", or "" in DefaultNamespace (whose ids hold no '/').
func NamespacePrefix(ns string) string {
	if ns == "" || ns == DefaultNamespace {
		return ""
	}
	return ns + NamespaceSep
}
