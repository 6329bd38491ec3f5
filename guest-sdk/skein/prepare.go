package skein

import (
	"runtime"
	"sort"
)

// Preparing a reactor (abi/README.md, "Start-up and snapshots"). The host
// calls the export skein_prepare once per module, after the start-up and
// before it takes the snapshot every execution starts from. The SDK runs
// the module's main there, up to Main: the workflows are registered, and
// what every run would otherwise do again before its first op (encoding/
// json's caches of the input and result types) is done once. skein_main
// then serves the invocation without running main again.

var (
	preparing bool                  // skein_prepare is running main
	prepared  bool                  // main reached Main in skein_prepare
	warmers   = map[string]func(){} // per workflow: encodes zero values of its input and result types
)

// prepare is Main while the host prepares the module.
func prepare() {
	prepared = true
	names := make([]string, 0, len(warmers))
	for n := range warmers {
		names = append(names, n)
	}
	sort.Strings(names) // the same snapshot from every preparation
	for _, n := range names {
		warm(warmers[n])
	}
	runtime.GC() // the snapshot keeps the heap compact
}

// warm runs f, and ignores a panic of a type's own MarshalJSON on its
// zero value: that type's caches then fill in the first run instead.
func warm(f func()) {
	defer func() { _ = recover() }()
	f()
}
