// Command v1 is version v1 of the pause tests' module (package wf).
package main

import (
	"github.com/skeinrun/skein/guest-sdk/skein"
	"github.com/skeinrun/skein/testdata/workflows/pause/internal/wf"
)

func main() {
	wf.Register("v1")
	skein.Main()
}
