// Package hosttest runs example workflows through the real host for the
// examples' own tests: build to wasm, deploy, run, and return the run and
// its outcomes.
package hosttest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// Run builds pkg (relative to the module root), runs workflow with input
// under the eviction policy against a fresh SQLite file, checks that a
// verifying replay reaches the same end, and returns the run and its
// outcomes in settle order.
func Run(t *testing.T, pkg, workflow, input string, evict host.Evict) (store.Run, []store.Outcome) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Compiled modules are cached on disk across test processes.
	cache := ""
	if dir, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(dir, "skein-wazero-test")
	}
	h, err := host.New(ctx, host.Config{Store: st, Evict: evict, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	wasm, err := os.ReadFile(wasmbuild.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(ctx, filepath.Base(pkg), wasm)
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: workflow, Input: json.RawMessage(input)})
	if err != nil {
		t.Fatal(err)
	}
	r, err = h.Drive(ctx, r.ID, host.DriveOptions{WaitTimers: true})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := h.Replay(ctx, r.ID)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if rr.Status != r.Status || string(rr.Result) != string(r.Result) {
		t.Fatalf("replay reached %s %s, the run %s %s", rr.Status, rr.Result, r.Status, r.Result)
	}
	_, outs, err := h.Inspect(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return r, outs
}

// Keys returns the keys of outcomes in order.
func Keys(outs []store.Outcome) []string {
	ks := make([]string, len(outs))
	for i, o := range outs {
		ks[i] = o.Key
	}
	return ks
}
