package engine

import (
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/skeinrun/skein/abi"
)

// checkImports refuses a module that imports what the engine does not
// provide, which would otherwise fail only when it is instantiated, with
// a linker message: a function of another module, a host function of
// another ABI version or signature, a WASI function skein leaves out
// (the socket extensions). It also refuses a module that is not a skein
// workflow module: one that imports nothing from the host module or
// exports no _start.
func (e *wazeroEngine) checkImports(cm wazero.CompiledModule) error {
	hostImports := 0
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		params, results := f.ParamTypes(), f.ResultTypes()
		switch mod {
		case wasi_snapshot_preview1.ModuleName:
			def, ok := e.wasi[name]
			if !ok {
				return &ImportError{fmt.Sprintf("it imports %s.%s, which skein does not provide (no sockets, no network; see abi/README.md §2)", mod, name)}
			}
			if !sameTypes(params, def.ParamTypes()) || !sameTypes(results, def.ResultTypes()) {
				return &ImportError{fmt.Sprintf("it imports %s.%s with signature %s -> %s; WASI defines %s -> %s",
					mod, name, typeNames(params), typeNames(results), typeNames(def.ParamTypes()), typeNames(def.ResultTypes()))}
			}
		case e.cfg.HostModule:
			sig, ok := e.host[name]
			if !ok {
				return &ImportError{fmt.Sprintf("it imports %s.%s, which skein ABI v%d does not provide (a module built for a newer skein?)", mod, name, abi.Version)}
			}
			want, wantRes := valueTypes(sig.Params), valueTypes(sig.Results)
			if !sameTypes(params, want) || !sameTypes(results, wantRes) {
				return &ImportError{fmt.Sprintf("it imports %s.%s with signature %s -> %s; skein ABI v%d defines %s -> %s",
					mod, name, typeNames(params), typeNames(results), abi.Version, typeNames(want), typeNames(wantRes))}
			}
			hostImports++
		default:
			return &ImportError{fmt.Sprintf("it imports %s.%s; skein provides only the modules %q (ABI v%d) and %q", mod, name, e.cfg.HostModule, abi.Version, wasi_snapshot_preview1.ModuleName)}
		}
	}
	if hostImports == 0 {
		return &ImportError{fmt.Sprintf("not a skein module: it imports nothing from module %q (build it with GOOS=wasip1 GOARCH=wasm against github.com/skeinrun/skein/guest-sdk/skein)", e.cfg.HostModule)}
	}
	if _, ok := cm.ExportedFunctions()["_start"]; !ok {
		return &ImportError{"not a skein module: it exports no _start function (build a main package, a WASI command)"}
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func typeNames(ts []api.ValueType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = api.ValueTypeName(t)
	}
	return "(" + strings.Join(names, ",") + ")"
}

// WASIFunctions lists the WASI functions the engine provides, by name.
func WASIFunctions(e Engine) []string {
	w, ok := e.(*wazeroEngine)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(w.wasi))
	for n := range w.wasi {
		names = append(names, n)
	}
	return names
}
