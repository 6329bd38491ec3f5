package host

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
)

// preAttempt is the last commit whose Go SDK predates the attempt number
// in the run-body OpResult (abi/README.md, OpResult).
const preAttempt = "8db3d52b928cc439f23731fc6dc197dce77e91e8"

// buildAt builds pkg with the guest SDK of the repository's commit rev:
// a module built before a change of the ABI. It skips when the checkout
// has no history of rev (a shallow clone).
func buildAt(t *testing.T, rev, pkg string) []byte {
	t.Helper()
	root := wasmbuild.Root()
	if err := osexec.Command("git", "-C", root, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s is not in this checkout (%v): cannot build an old module", rev[:7], err)
	}
	dir := t.TempDir()
	archive := osexec.Command("sh", "-c", `git -C "$1" archive "$2" go.mod go.sum abi lineage shape guest-sdk/skein "$3" | tar -x -C "$4"`,
		"sh", root, rev, strings.TrimPrefix(pkg, "./"), dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extract %s at %s: %v\n%s", pkg, rev[:7], err, out)
	}
	out := filepath.Join(dir, "old.wasm")
	build := osexec.Command("go", "build", "-buildmode="+wasmbuild.Mode(), "-o", out, pkg)
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s at %s: %v\n%s", pkg, rev[:7], err, msg)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// A module built with the SDK before the attempt number reads the
// run-body OpResult that now carries it, unchanged: its retried step
// runs its three attempts and its other steps their bodies, live and on
// replay.
func TestOldModuleRunsStepBodies(t *testing.T) {
	wasm := buildAt(t, preAttempt, "./examples/saga")
	ctx := context.Background()
	for _, evict := range []Evict{EvictNever, EvictAlways} {
		h := newTestHost(t, Config{Evict: evict})
		m, err := h.Deploy(ctx, "saga-old", wasm)
		if err != nil {
			t.Fatal(err)
		}
		r := h.runToEnd(t, m, "saga", `{"trip":"lisbon","card":"declined"}`, "declined")
		if want := "charge-card failed: card declined; compensated: undid reserve-hotel, undid reserve-flight"; r.Status != store.RunFailed || r.Error != want {
			t.Fatalf("%s: run %s %q, want failed %q", evict, r.Status, r.Error, want)
		}
		for _, o := range h.outcomes(t, r.ID) {
			if o.Key == "3" && (o.Attempts != 3 || o.Error != "card declined") {
				t.Fatalf("%s: charge-card %+v, want 3 attempts", evict, o)
			}
		}
		r = h.runToEnd(t, m, "saga", `{"trip":"oslo","card":"visa"}`, "booked")
		if r.Status != store.RunCompleted || string(r.Result) != `"flight for oslo; hotel for oslo; charged visa"` {
			t.Fatalf("%s: run %s %s %s", evict, r.Status, r.Result, r.Error)
		}
	}
}
