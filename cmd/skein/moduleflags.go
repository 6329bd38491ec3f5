package main

import (
	"flag"
	"time"

	"github.com/skeinrun/skein/host"
)

// moduleFlags are the limits on modules of `skein run` and `skein serve`:
// their structure, their compilation, the compiled-module cache and the
// quota on stored modules (host.Config; docs/limits.md).
type moduleFlags struct {
	limits         *host.ModuleLimits
	structure      map[*int]*int // field of *limits -> its flag's value
	compileTimeout *time.Duration
	compiles       *int
	deploys        *int
	compiledBytes  *int64
	storedBytes    *int64
}

func addModuleFlags(fs *flag.FlagSet) *moduleFlags {
	d := host.DefaultModuleLimits
	l := &host.ModuleLimits{}
	m := &moduleFlags{limits: l, structure: map[*int]*int{}}
	for _, f := range []struct {
		field *int
		name  string
		def   int
		usage string
	}{
		{&l.MaxNesting, "nesting", d.MaxNesting, "most blocks, loops and ifs open at once in one function of a module"},
		{&l.MaxControlOps, "control-ops", d.MaxControlOps, "most control instructions (block, loop, if, else, br, br_if, br_table) in one function of a module"},
		{&l.MaxFunctions, "functions", d.MaxFunctions, "most functions in a module"},
		{&l.MaxFunctionBytes, "function-bytes", d.MaxFunctionBytes, "largest function body in a module, in bytes"},
		{&l.MaxLocals, "locals", d.MaxLocals, "most locals one function of a module declares"},
		{&l.MaxTypes, "types", d.MaxTypes, "most function types in a module"},
		{&l.MaxTypeValues, "type-values", d.MaxTypeValues, "most parameters plus results of one function type"},
		{&l.MaxImports, "imports", d.MaxImports, "most imports in a module"},
		{&l.MaxExports, "exports", d.MaxExports, "most exports in a module"},
		{&l.MaxGlobals, "globals", d.MaxGlobals, "most globals in a module"},
		{&l.MaxTableElements, "table-elements", d.MaxTableElements, "largest size a table of a module can reach, and most elements in its element segments"},
		{&l.MaxDataSegments, "data-segments", d.MaxDataSegments, "most data segments in a module"},
		{&l.MaxElementSegments, "element-segments", d.MaxElementSegments, "most element segments in a module"},
	} {
		m.structure[f.field] = fs.Int("max-module-"+f.name, f.def, f.usage+"; negative: no limit")
	}
	m.compileTimeout = fs.Duration("compile-timeout", host.DefaultCompileTimeout, "longest a deployed module may take to compile; negative: no limit")
	m.compiles = fs.Int("max-concurrent-compiles", host.DefaultMaxConcurrentCompiles(), "most module compilations at once (each uses two threads)")
	m.deploys = fs.Int("max-concurrent-deploys", host.DefaultMaxConcurrentDeploys, "most deploys in progress at once (each holds its module in memory); others wait")
	m.compiledBytes = fs.Int64("max-compiled-bytes", host.DefaultMaxCompiledBytes, "estimated memory of the compiled modules kept in memory; least recently used ones are evicted past it; negative: no limit")
	m.storedBytes = fs.Int64("max-stored-module-bytes", host.DefaultMaxStoredModuleBytes, "quota on the bytes of all stored modules; a deploy past it is refused; negative: no quota")
	return m
}

// apply sets the module limits in cfg.
func (m *moduleFlags) apply(cfg *host.Config) {
	for field, v := range m.structure {
		*field = *v
	}
	cfg.ModuleLimits = *m.limits
	cfg.CompileTimeout = *m.compileTimeout
	cfg.MaxConcurrentCompiles = *m.compiles
	cfg.MaxConcurrentDeploys = *m.deploys
	cfg.MaxCompiledBytes = *m.compiledBytes
	cfg.MaxStoredModuleBytes = *m.storedBytes
}
