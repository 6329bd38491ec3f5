package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skeinrun/skein/abi"
)

// wasiModule is the module name of the WASI functions skein provides.
const wasiModule = "wasi_snapshot_preview1"

// importedFunc is a function a module imports.
type importedFunc struct {
	module, name    string
	params, results []ValueType
}

// provided is what an engine gives guests to import: the host module's
// functions and the WASI functions, by name. Both engines check a
// module's imports against it the same way, with the same messages.
type provided struct {
	hostModule string
	host       map[string]FuncType
	wasi       map[string]FuncType
}

// checkImports refuses a module that imports what the engine does not
// provide, which would otherwise fail only when it is instantiated, with
// a linker message: a function of another module, a host function of
// another ABI version or signature, a WASI function skein leaves out
// (the socket extensions). It also refuses a module that is not a skein
// workflow module: one that imports nothing from the host module or has
// no entry (entry: it exports _start, or _initialize and skein_main).
func (p *provided) checkImports(imports []importedFunc, entry bool) error {
	hostImports := 0
	for _, f := range imports {
		mod, name, params, results := f.module, f.name, f.params, f.results
		switch mod {
		case wasiModule:
			def, ok := p.wasi[name]
			if !ok {
				return &ImportError{fmt.Sprintf("it imports %s.%s, which skein does not provide (no sockets, no network; see abi/README.md §2)", mod, name)}
			}
			if !slices.Equal(params, def.Params) || !slices.Equal(results, def.Results) {
				return &ImportError{fmt.Sprintf("it imports %s.%s with signature %s -> %s; WASI defines %s -> %s",
					mod, name, typeNames(params), typeNames(results), typeNames(def.Params), typeNames(def.Results))}
			}
		case p.hostModule:
			sig, ok := p.host[name]
			if !ok {
				return &ImportError{fmt.Sprintf("it imports %s.%s, which skein ABI v%d does not provide (a module built for a newer skein?)", mod, name, abi.Version)}
			}
			if !slices.Equal(params, sig.Params) || !slices.Equal(results, sig.Results) {
				return &ImportError{fmt.Sprintf("it imports %s.%s with signature %s -> %s; skein ABI v%d defines %s -> %s",
					mod, name, typeNames(params), typeNames(results), abi.Version, typeNames(sig.Params), typeNames(sig.Results))}
			}
			hostImports++
		default:
			return &ImportError{fmt.Sprintf("it imports %s.%s; skein provides only the modules %q (ABI v%d) and %q", mod, name, p.hostModule, abi.Version, wasiModule)}
		}
	}
	if hostImports == 0 {
		return &ImportError{fmt.Sprintf("not a skein module: it imports nothing from module %q (build it with GOOS=wasip1 GOARCH=wasm against github.com/skeinrun/skein/guest-sdk/skein)", p.hostModule)}
	}
	if !entry {
		return &ImportError{"not a skein module: it exports no _start function (a WASI command: build a main package), nor _initialize and skein_main (a reactor: build a main package with -buildmode=c-shared)"}
	}
	return nil
}

func typeNames(ts []ValueType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return "(" + strings.Join(names, ",") + ")"
}

// wasiNames lists the WASI functions provided, by name.
func (p *provided) wasiNames() []string {
	names := make([]string, 0, len(p.wasi))
	for n := range p.wasi {
		names = append(names, n)
	}
	return names
}

// hasEntry reports whether a module's exported functions include an
// entry: _start, or _initialize and skein_main (reactor.go).
func hasEntry(exported func(name string) bool) bool {
	return exported("_start") || (exported(ReactorInit) && exported(ReactorEntry))
}

// WASIFunctions lists the WASI functions the engine provides, by name.
func WASIFunctions(e Engine) []string {
	w, ok := e.(interface{ wasiNames() []string })
	if !ok {
		return nil
	}
	return w.wasiNames()
}
