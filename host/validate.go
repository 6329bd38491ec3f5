package host

import (
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// checkWASI rejects a module that imports a wasi_snapshot_preview1
// function the host does not provide (WASI socket extensions such as
// sock_open, for example), which would otherwise fail only when the
// module is instantiated, with a linker message.
func (h *Host) checkWASI(cm wazero.CompiledModule) error {
	wasi := h.rt.Module(wasi_snapshot_preview1.ModuleName)
	if wasi == nil {
		return nil
	}
	provided := wasi.ExportedFunctionDefinitions()
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod != wasi_snapshot_preview1.ModuleName {
			continue
		}
		def, ok := provided[name]
		if !ok {
			return fmt.Errorf("it imports %s.%s, which skein does not provide (no sockets, no network; see abi/README.md §2)", mod, name)
		}
		if !sameTypes(f.ParamTypes(), def.ParamTypes()) || !sameTypes(f.ResultTypes(), def.ResultTypes()) {
			return fmt.Errorf("it imports %s.%s with signature %s -> %s; WASI defines %s -> %s",
				mod, name, typeNames(f.ParamTypes()), typeNames(f.ResultTypes()), typeNames(def.ParamTypes()), typeNames(def.ResultTypes()))
		}
	}
	return nil
}
