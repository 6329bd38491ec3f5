package store

import (
	"encoding/json"
	"slices"
	"time"
)

// Module is a deployed workflow module, addressed by the sha256 of its bytes.
type Module struct {
	Hash string // hex sha256 of Bytes
	// Name is, given to PutModule, the name to point at the module (empty:
	// none); read, the name most recently pointed at it (empty: none).
	Name string
	// Names are every name that points at the module, sorted; set by
	// reads. A name points at one module: the one last stored under it.
	Names []string
	// DeployedNames are every name the module was stored under, sorted:
	// Names, and those that point at another module since.
	DeployedNames []string
	Bytes         []byte   // the .wasm file
	Size          int64    // len(Bytes); set by every read, with or without the bytes
	ABIVersion    int      // ABI version the module speaks
	Workflows     []string // registered workflow names, sorted
	// InputSchemas holds the JSON Schema of each workflow's input, by
	// workflow name, as the module announced them (abi.FnInputSchema);
	// nil for a module that announced none (no input is checked).
	InputSchemas map[string]json.RawMessage
	// Namespace is, given to PutModule, the namespace that stores the
	// module (empty: the namespace of Name, store/namespace.go); it then
	// owns the module. Reads leave it empty and set Namespaces.
	Namespace string
	// Namespaces are the namespaces that own the module, sorted: every
	// one that stored it. Set by reads.
	Namespaces []string
	CreatedAt  time.Time
}

// Owner is the namespace that PutModule(m) makes an owner of m.
func (m Module) Owner() string {
	if m.Namespace != "" {
		return m.Namespace
	}
	return NamespaceOf(m.Name)
}

// OwnedBy reports whether namespace ns owns m (a read module).
func (m Module) OwnedBy(ns string) bool { return slices.Contains(m.Namespaces, ns) }
