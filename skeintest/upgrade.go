package skeintest

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host/check"
	"github.com/skeinrun/skein/store"
)

// UpgradeOptions tune CheckUpgrade; the zero value checks the suspended
// and running runs of every workflow the new module registers.
type UpgradeOptions struct {
	// Workflow limits the check to the runs of one workflow.
	Workflow string
	// Statuses are the statuses of the runs checked; default suspended
	// and running.
	Statuses []store.RunStatus
}

// CheckUpgrade replays every live run in st against the module at
// newWasmPath (check.Upgrade) and fails t, listing each run that
// would break with its key, recorded function and new function. It
// returns the report for further assertions.
//
//	skeintest.CheckUpgrade(t, st, "order-v2.wasm", skeintest.UpgradeOptions{Workflow: "order"})
func CheckUpgrade(t testing.TB, st store.Store, newWasmPath string, o UpgradeOptions) *check.UpgradeReport {
	t.Helper()
	ctx, wasm, cache := setup(t, newWasmPath)
	r, err := check.Upgrade(ctx, wasm, check.UpgradeOptions{Store: st, Workflow: o.Workflow, Statuses: o.Statuses, CacheDir: cache})
	if err != nil {
		t.Fatalf("skeintest: %v", err)
	}
	if !r.OK() {
		var details strings.Builder
		r.Details(&details, true)
		t.Errorf("skeintest: %s\n%s", r.Summary(), details.String())
		return r
	}
	t.Logf("skeintest: %s (%s)", r.Summary(), r.Elapsed.Round(time.Millisecond))
	return r
}
