//go:build !wasmtime

package engine

import "context"

// HasWasmtime reports whether this binary was built with the wasmtime
// engine (-tags wasmtime).
const HasWasmtime = false

func newWasmtime(context.Context, Config) (Engine, error) { return nil, ErrNoWasmtime }
