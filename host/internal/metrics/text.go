package metrics

import (
	"bufio"
	"fmt"

	"github.com/skeinrun/skein/host/internal/modules"
)

// Flag is 1 for true, 0 for false: a gauge of a condition.
func Flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteModules writes the compiled-module cache's metrics.
func WriteModules(bw *bufio.Writer, head func(name, typ, help string), st modules.Stats, limit int64) {
	head("skein_compiled_modules", "gauge", "Compiled modules in the host's cache.")
	fmt.Fprintf(bw, "skein_compiled_modules %d\n", st.Entries)
	head("skein_compiled_module_bytes", "gauge", "Estimated memory of the compiled modules in the cache (machine code, decoded module, memory image).")
	fmt.Fprintf(bw, "skein_compiled_module_bytes %d\n", st.Bytes)
	head("skein_compiled_module_bytes_limit", "gauge", "The cache's bound, Config.MaxCompiledBytes (--max-compiled-bytes); -1: none.")
	fmt.Fprintf(bw, "skein_compiled_module_bytes_limit %d\n", max(limit, -1))
	head("skein_compiled_module_evictions_total", "counter", "Compiled modules evicted from the cache to stay within its bound.")
	fmt.Fprintf(bw, "skein_compiled_module_evictions_total %d\n", st.Evictions)
	head("skein_compiled_module_discards_total", "counter", "Compiled modules dropped because the module was rejected after compiling (at the describe step or when storing it).")
	fmt.Fprintf(bw, "skein_compiled_module_discards_total %d\n", st.Discarded)
	head("skein_module_compiles_running", "gauge", "Compilations holding one of the --max-concurrent-compiles slots (stopped ones too, until they end).")
	fmt.Fprintf(bw, "skein_module_compiles_running %d\n", st.Running)
	head("skein_module_compiles_waiting", "gauge", "Compilations waiting for a slot.")
	fmt.Fprintf(bw, "skein_module_compiles_waiting %d\n", st.Waiting)
	head("skein_module_compiles_total", "counter", "Compilations of modules that succeeded (a cache miss compiles, or loads from the disk cache of --cache-dir).")
	fmt.Fprintf(bw, "skein_module_compiles_total %d\n", st.Compiles)
}
