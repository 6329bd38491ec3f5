// Command unregistered is a skein module that registers no workflow: it
// compiles and speaks the ABI, and deploy rejects it when it describes
// itself ("it registers no workflows"). Tests upload variants of it to
// check that rejected modules leave nothing behind in the host.
package main

import "github.com/skeinrun/skein/guest-sdk/skein"

func main() { skein.Main() }
