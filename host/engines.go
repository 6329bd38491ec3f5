package host

import (
	"fmt"

	"github.com/skeinrun/skein/host/internal/engine"
)

// The engines Config.Engine names (docs/engines.md).
const (
	EngineWazero   = engine.Wazero   // pure Go, the default
	EngineWasmtime = engine.Wasmtime // cgo; only in a binary built with -tags wasmtime
)

// CheckEngine returns an error naming Config.Engine and --engine when
// this binary cannot run the engine called name: an unknown name, or
// wasmtime in a binary built without it (the error says how to build
// one with it). "" is the default engine, wazero.
func CheckEngine(name string) error {
	switch name {
	case "", engine.Wazero:
		return nil
	case engine.Wasmtime:
		if engine.HasWasmtime {
			return nil
		}
		return fmt.Errorf("Config.Engine %q (--engine): %w", name, engine.ErrNoWasmtime)
	}
	return fmt.Errorf("unknown engine %q (Config.Engine; --engine): want %q or %q", name, engine.Wazero, engine.Wasmtime)
}
