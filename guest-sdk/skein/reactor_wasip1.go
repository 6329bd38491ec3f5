//go:build wasip1

package skein

import _ "unsafe" // go:linkname

// A module built as a reactor (go build -buildmode=c-shared) initialises
// the Go runtime and its packages in _initialize and does not run main
// on its own; the host calls skein_main, which runs main, once per
// instance (abi/README.md, "Start-up and snapshots"). The host runs
// _initialize once per module and starts every instance from its state
// after it. A module built as a command (the default) runs main from
// _start, and skein_main is never called.

//go:linkname userMain main.main
func userMain()

//go:wasmexport skein_main
func reactorMain() { userMain() }
