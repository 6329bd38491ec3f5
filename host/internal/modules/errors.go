package modules

import (
	"fmt"

	"github.com/skeinrun/skein/host/internal/wasmlimits"
)

// Error reports a module that skein cannot run: not wasm, not a skein
// module, a wrong ABI version, imports skein does not provide, over a
// limit. host.ModuleError is this type.
type Error struct {
	Module string // name or file the caller gave
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Module == "" {
		return "module rejected: " + e.Reason
	}
	return fmt.Sprintf("module %s rejected: %s", e.Module, e.Reason)
}

func (e *Error) Unwrap() error { return e.Err }

// LimitFields maps each wasmlimits limit to the host.Config field that
// sets it.
var LimitFields = map[string]string{
	"Nesting":         "ModuleLimits.MaxNesting",
	"ControlOps":      "ModuleLimits.MaxControlOps",
	"Functions":       "ModuleLimits.MaxFunctions",
	"FunctionBytes":   "ModuleLimits.MaxFunctionBytes",
	"Locals":          "ModuleLimits.MaxLocals",
	"Types":           "ModuleLimits.MaxTypes",
	"TypeValues":      "ModuleLimits.MaxTypeValues",
	"Imports":         "ModuleLimits.MaxImports",
	"Exports":         "ModuleLimits.MaxExports",
	"Globals":         "ModuleLimits.MaxGlobals",
	"TableElements":   "ModuleLimits.MaxTableElements",
	"DataSegments":    "ModuleLimits.MaxDataSegments",
	"ElementSegments": "ModuleLimits.MaxElementSegments",
	"MemoryPages":     "MemoryLimitPages",
}

// structureError turns a wasmlimits error into a module's: an exceeded
// limit names its Config field.
func (s *Set) structureError(label string, err error) error {
	if e, ok := err.(*wasmlimits.ExceededError); ok {
		f := LimitFields[e.Limit]
		value := fmt.Sprint(e.Max)
		if e.Limit == "MemoryPages" {
			value = fmt.Sprintf("%d pages (%d MiB)", e.Max, e.Max*64>>10)
		}
		le := s.cfg.Hints.New(e.What, f, value)
		return &Error{Module: label, Reason: le.Error(), Err: le}
	}
	return &Error{Module: label, Reason: "invalid WebAssembly: " + err.Error(), Err: err}
}
