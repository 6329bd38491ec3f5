package host

import (
	"runtime"
	"time"

	"github.com/skeinrun/skein/host/internal/wasmlimits"
)

// ModuleLimits bounds the structure of a module. Every module is measured
// against them before it is compiled (host/internal/wasmlimits), in time
// linear in its size: a module over one is rejected with a *LimitError
// that names the field, and is never compiled. A zero field takes its
// default (DefaultModuleLimits); a negative one is not checked.
// docs/limits.md gives the compile times the defaults were chosen from.
type ModuleLimits struct {
	// MaxNesting caps the blocks, loops and ifs open at once in one
	// function. Default 4096.
	MaxNesting int
	// MaxControlOps caps the control instructions (block, loop, if, else,
	// br, br_if, br_table) of one function: wazero's compile time grows
	// with their square. Default 8192.
	MaxControlOps int
	// MaxFunctions caps the functions, imported and defined. Default 100,000.
	MaxFunctions int
	// MaxFunctionBytes caps the size of one function body. Default 1 MiB.
	MaxFunctionBytes int
	// MaxLocals caps the locals one function declares. Default 512.
	MaxLocals int
	// MaxTypes caps the function types. Default 1024.
	MaxTypes int
	// MaxTypeValues caps the parameters plus results of one function
	// type. Default 128.
	MaxTypeValues int
	// MaxImports and MaxExports cap the imports and exports. Default 1024 each.
	MaxImports, MaxExports int
	// MaxGlobals caps the globals. Default 10,000.
	MaxGlobals int
	// MaxTableElements caps the size a table can reach (its initial size,
	// or its maximum when the module has table.grow) and the elements of
	// all element segments together. Default 262,144.
	MaxTableElements int
	// MaxDataSegments caps the data segments. Default 1,000,000.
	MaxDataSegments int
	// MaxElementSegments caps the element segments. Default 10,000.
	MaxElementSegments int
}

// DefaultModuleLimits are the defaults of Config.ModuleLimits.
var DefaultModuleLimits = ModuleLimits{
	MaxNesting:         4096,
	MaxControlOps:      8192,
	MaxFunctions:       100_000,
	MaxFunctionBytes:   1 << 20,
	MaxLocals:          512,
	MaxTypes:           1024,
	MaxTypeValues:      128,
	MaxImports:         1024,
	MaxExports:         1024,
	MaxGlobals:         10_000,
	MaxTableElements:   262_144,
	MaxDataSegments:    1_000_000,
	MaxElementSegments: 10_000,
}

// Defaults of the module limits of Config (docs/limits.md).
const (
	DefaultCompileTimeout       = time.Minute
	DefaultMaxCompiledBytes     = 512 << 20
	DefaultMaxConcurrentDeploys = 2
	DefaultMaxStoredModuleBytes = 4 << 30
)

// DefaultMaxConcurrentCompiles is the default of
// Config.MaxConcurrentCompiles: half the cores, at least one (a compile
// runs on two threads; see compileWorkers).
func DefaultMaxConcurrentCompiles() int { return max(1, runtime.GOMAXPROCS(0)/2) }

func (c *Config) setModuleDefaults() {
	l, d := &c.ModuleLimits, DefaultModuleLimits
	for _, f := range []struct {
		v *int
		d int
	}{
		{&l.MaxNesting, d.MaxNesting}, {&l.MaxControlOps, d.MaxControlOps}, {&l.MaxFunctions, d.MaxFunctions},
		{&l.MaxFunctionBytes, d.MaxFunctionBytes}, {&l.MaxLocals, d.MaxLocals}, {&l.MaxTypes, d.MaxTypes},
		{&l.MaxTypeValues, d.MaxTypeValues}, {&l.MaxImports, d.MaxImports}, {&l.MaxExports, d.MaxExports},
		{&l.MaxGlobals, d.MaxGlobals}, {&l.MaxTableElements, d.MaxTableElements},
		{&l.MaxDataSegments, d.MaxDataSegments}, {&l.MaxElementSegments, d.MaxElementSegments},
	} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	if c.CompileTimeout == 0 {
		c.CompileTimeout = DefaultCompileTimeout
	}
	if c.MaxConcurrentCompiles <= 0 {
		c.MaxConcurrentCompiles = DefaultMaxConcurrentCompiles()
	}
	if c.MaxConcurrentDeploys <= 0 {
		c.MaxConcurrentDeploys = DefaultMaxConcurrentDeploys
	}
	if c.MaxCompiledBytes == 0 {
		c.MaxCompiledBytes = DefaultMaxCompiledBytes
	}
	if c.MaxStoredModuleBytes == 0 {
		c.MaxStoredModuleBytes = DefaultMaxStoredModuleBytes
	}
}

// structureLimits are the limits wasmlimits checks.
func (c *Config) structureLimits() wasmlimits.Limits {
	l := c.ModuleLimits
	return wasmlimits.Limits{
		Nesting: l.MaxNesting, ControlOps: l.MaxControlOps, Functions: l.MaxFunctions,
		FunctionBytes: l.MaxFunctionBytes, Locals: l.MaxLocals, Types: l.MaxTypes,
		TypeValues: l.MaxTypeValues, Imports: l.MaxImports, Exports: l.MaxExports,
		Globals: l.MaxGlobals, TableElements: l.MaxTableElements,
		DataSegments: l.MaxDataSegments, ElementSegments: l.MaxElementSegments,
		MemoryPages: int(c.MemoryLimitPages),
	}
}
