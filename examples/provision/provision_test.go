package main

import (
	"slices"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
)

func TestProvision(t *testing.T) {
	for wf, want := range map[string][]string{
		"provision_vm":       {"1", "2.0.1", "2.1.1"},
		"provision_vm_named": {"create-vm", "fanout.0.attach-ip", "fanout.1.setup-sg"},
	} {
		r, outs := hosttest.Run(t, "./examples/provision", wf, `{"name":"db","size":"large"}`, host.EvictAlways)
		if string(r.Result) != `"10.0.0.7/vm-db-large"` {
			t.Fatalf("%s: result %s (%s)", wf, r.Result, r.Error)
		}
		keys := hosttest.Keys(outs)
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			t.Fatalf("%s: keys %q, want %q", wf, keys, want)
		}
	}
}

// Both versions replay exactly from every crash point under seeded
// schedules, and the fork's ids never depend on which branch ends first.
func TestProvisionCheck(t *testing.T) {
	wasm := wasmbuild.Build(t, "./examples/provision")
	for _, wf := range []string{"provision_vm", "provision_vm_named"} {
		skeintest.Check(t, wasm, wf, `{"name":"db","size":"large"}`, skeintest.Options{Schedules: 100, ScheduleIndependent: true})
	}
}
