//go:build wasip1

package skein

import (
	"runtime"
	"runtime/debug"
)

// reactorHeadroom is heap a reactor's start-up takes and frees again.
//
// The host starts every instance of a reactor (a module built with
// -buildmode=c-shared) from a snapshot of it after its start-up, and
// reuses an instance for the module's next run by resetting it to that
// snapshot; an instance whose memory grew during its run cannot be reset
// (a WebAssembly memory never shrinks) and is dropped instead
// (abi/README.md §1.1). The Go runtime grows the memory when its heap
// has no free pages left, so a start-up that leaves free pages in the
// heap lets most runs finish without growing it. The pages are never
// written before a run uses them, so they cost no memory until then.
const reactorHeadroom = 4 << 20

//lint:ignore U1000 written, never read: its allocation grows the heap
var headroom []byte

func init() {
	if !builtAsReactor() {
		return
	}
	headroom = make([]byte, reactorHeadroom)
	headroom = nil
	runtime.GC() // the pages are free again, in the heap
}

// builtAsReactor reports whether the module was built with
// -buildmode=c-shared.
func builtAsReactor() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-buildmode" {
			return s.Value == "c-shared"
		}
	}
	return false
}
