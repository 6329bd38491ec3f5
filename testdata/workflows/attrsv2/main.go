// Command attrsv2 is examples/attrs changed under its runs: its first op
// sets another region, so a run of examples/attrs resumed on it diverges
// at that op (cmd/skein/attrs_test.go).
package main

import "github.com/skeinrun/skein/guest-sdk/skein"

type ticket struct {
	Customer int64  `json:"customer"`
	Region   string `json:"region"`
}

func run(ctx *skein.Context, t ticket) (string, error) {
	err := skein.SetAttributes(ctx, map[string]any{"customer": t.Customer, "region": t.Region + "-v2"})
	return "v2", err
}

func main() {
	skein.Register("ticket", run)
	skein.Main()
}
