// Package provision tests the Rust provision workflows (main.rs) through
// the real host: the same assertions as the Go provision's tests
// (examples/provision, host/identity_test.go).
package provision

import (
	"slices"
	"testing"

	"github.com/skeinrun/skein/internal/testing/guestbuild"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/skeintest"
)

var wantKeys = map[string][]string{
	"provision_vm":       {"1", "2.0.1", "2.1.1"},
	"provision_vm_named": {"create-vm", "fanout.0.attach-ip", "fanout.1.setup-sg"},
}

func TestRustProvision(t *testing.T) {
	wasm := guestbuild.Rust(t, "examples/rust/provision")
	for _, evict := range hosttest.Evicts {
		for wf, want := range wantKeys {
			r, outs, _ := hosttest.RunModule(t, wasm, wf, `{"name":"db","size":"large"}`, evict)
			if string(r.Result) != `"10.0.0.7/vm-db-large"` {
				t.Fatalf("%s %s: %s result %s (%s)", wf, evict, r.Status, r.Result, r.Error)
			}
			keys := hosttest.Keys(outs)
			slices.Sort(keys)
			if !slices.Equal(keys, want) {
				t.Fatalf("%s %s: keys %q, want %q", wf, evict, keys, want)
			}
			if o := hosttest.Outcome(t, outs, want[2]); o.Function != "setup_security_group" || string(o.Value) != `"sg-db/vm-db-large"` {
				t.Fatalf("%s %s: %s = %s %s", wf, evict, want[2], o.Function, o.Value)
			}
		}
	}
}

// Both versions replay exactly from every crash point under seeded
// schedules, and the fork's ids never depend on which branch ends first.
func TestRustProvisionCheck(t *testing.T) {
	wasm := guestbuild.Rust(t, "examples/rust/provision")
	for wf := range wantKeys {
		skeintest.Check(t, wasm, wf, `{"name":"db","size":"large"}`, skeintest.Options{Schedules: 100, ScheduleIndependent: true})
	}
}
