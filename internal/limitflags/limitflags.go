// Package limitflags maps the host.Config fields that a host.LimitError
// (or a denial of the HTTP activity) names to the flags of `skein run` and `skein serve` that set them: the
// CLI's host.Config.LimitHint. The library names fields only; the
// command line is the CLI's business.
package limitflags

import "maps"

// flags are the flags by Config field.
var flags = map[string]string{
	"MemoryLimitPages":      "--max-memory-mib",
	"MaxRunWithoutYield":    "--max-run-without-yield",
	"MaxExecutionTime":      "--max-execution-time",
	"MaxExecutionCPU":       "--max-execution-cpu",
	"MaxPayloadBytes":       "--max-payload-bytes",
	"MaxOps":                "--max-ops",
	"MaxJournalOps":         "--max-journal-ops",
	"MaxTasks":              "--max-tasks",
	"MaxChildDepth":         "--max-child-depth",
	"MaxChildren":           "--max-children",
	"MaxModuleBytes":        "--max-module-bytes",
	"CompileTimeout":        "--compile-timeout",
	"MaxConcurrentCompiles": "--max-concurrent-compiles",
	"MaxConcurrentDeploys":  "--max-concurrent-deploys",
	"MaxCompiledBytes":      "--max-compiled-bytes",
	"MaxStoredModuleBytes":  "--max-stored-module-bytes",

	// The built-in HTTP activity's egress policy (not a limit, but its
	// denials name where it is set the same way).
	"HTTPAllow":            "--allow-http",
	"HTTPTimeout":          "--http-timeout",
	"HTTPMaxResponseBytes": "--http-max-response",
	// The HTTP activity's requests in progress (no error: a request waits).
	"HTTPMaxConcurrentPerRun": "--http-max-concurrent-per-run",
	"HTTPMaxConcurrent":       "--http-max-concurrent",

	"ModuleLimits.MaxNesting":         "--max-module-nesting",
	"ModuleLimits.MaxControlOps":      "--max-module-control-ops",
	"ModuleLimits.MaxFunctions":       "--max-module-functions",
	"ModuleLimits.MaxFunctionBytes":   "--max-module-function-bytes",
	"ModuleLimits.MaxLocals":          "--max-module-locals",
	"ModuleLimits.MaxTypes":           "--max-module-types",
	"ModuleLimits.MaxTypeValues":      "--max-module-type-values",
	"ModuleLimits.MaxImports":         "--max-module-imports",
	"ModuleLimits.MaxExports":         "--max-module-exports",
	"ModuleLimits.MaxGlobals":         "--max-module-globals",
	"ModuleLimits.MaxTableElements":   "--max-module-table-elements",
	"ModuleLimits.MaxDataSegments":    "--max-module-data-segments",
	"ModuleLimits.MaxElementSegments": "--max-module-element-segments",
}

// Flag returns the flag that sets Config field field, "" if none does.
func Flag(field string) string { return flags[field] }

// All returns every field and its flag.
func All() map[string]string { return maps.Clone(flags) }
