package skein

import "runtime"

// Preparing a reactor (abi/README.md, "Start-up and snapshots"). The host
// calls the export skein_prepare once per module, after the start-up and
// before it takes the snapshot every execution starts from. The SDK runs
// the module's main there, up to Main: the workflows are registered, and
// what every run would otherwise do again before its first op (encoding/
// json's caches of the input and result types) is done once. skein_main
// then serves the invocation without running main again.

var (
	preparing bool // skein_prepare is running main
	//lint:ignore U1000 read by the reactor's entries (reactor_wasip1.go), which the native build leaves out
	prepared bool                  // main reached Main in skein_prepare
	warmers  = map[string]func(){} // per workflow: encodes zero values of its input and result types
)

// prepare is Main while the host prepares the module.
func prepare() {
	prepared = true
	for _, n := range workflowNames() { // in order: the same snapshot from every preparation
		warm(warmers[n])
	}
	runtime.GC() // the snapshot keeps the heap compact
	for range spareGoroutines {
		startSpare()
	}
}

// spareGoroutines wait in idle in the snapshot, with stacks of
// spareStack bytes grown already, for the root task and the first tasks
// of every execution: a new goroutine's stack grows by copying, which in
// WebAssembly walks every frame's tables.
const (
	spareGoroutines = 16
	spareStack      = 16 << 10
)

// startSpare starts a spare goroutine and returns once its stack has
// grown and it waits for a task.
func startSpare() {
	wake := make(chan *task, 1)
	grown := make(chan struct{})
	go func() {
		growStack(spareStack)
		close(grown)
		runTasks(<-wake, wake)
	}()
	<-grown
	idle = append(idle, wake)
}

// growStack uses about n bytes of stack.
//
//go:noinline
func growStack(n int) byte {
	var frame [1024]byte
	frame[n%len(frame)] = byte(n)
	if n <= len(frame) {
		return frame[0]
	}
	return growStack(n-len(frame)) + frame[(n/2)%len(frame)]
}

// warm runs f, and ignores a panic of a type's own MarshalJSON on its
// zero value: that type's caches then fill in the first run instead.
func warm(f func()) {
	defer func() { _ = recover() }()
	f()
}
