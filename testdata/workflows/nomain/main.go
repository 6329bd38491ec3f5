// Command nomain is a broken skein module: its main registers a workflow
// and returns without calling skein.Main. Deploy rejects it, naming the
// mistake.
package main

import "github.com/skeinrun/skein/guest-sdk/skein"

func hello(*skein.Context, struct{}) (string, error) { return "hello", nil }

func main() { skein.Register("hello", hello) }
