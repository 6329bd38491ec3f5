//go:build wasip1

package skein

import _ "unsafe" // go:linkname

// A module built as a reactor (go build -buildmode=c-shared) initialises
// the Go runtime and its packages in _initialize and does not run main
// on its own (abi/README.md, "Start-up and snapshots"). The host then
// calls skein_prepare, which runs main up to Main (prepare.go), and takes
// its snapshot; every instance starts from it and the host calls
// skein_main, which serves the invocation. A module built as a command
// (the default) runs main from _start, and neither export is called.

//go:linkname userMain main.main
func userMain()

//lint:ignore U1000 called by the host: staticcheck does not see go:wasmexport
//go:wasmexport skein_prepare
func reactorPrepare() {
	preparing = true
	userMain()
	preparing = false
	if !prepared {
		panic("skein: main returned without calling skein.Main")
	}
}

//lint:ignore U1000 called by the host: staticcheck does not see go:wasmexport
//go:wasmexport skein_main
func reactorMain() {
	if prepared {
		serve()
		return
	}
	userMain() // the host did not prepare the module
}
