package skeintest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// CheckUpgrade fails the test with each run that would break (key,
// recorded function, new function), and passes the runs that replay.
func TestCheckUpgrade(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := host.New(ctx, host.Config{Store: st, IdleThreshold: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/versions/v1"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(ctx, "v1", wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, wf := range []string{"positional", "named"} {
		r, err := h.Start(ctx, host.StartOptions{Module: m.Hash, Workflow: wf})
		if err != nil {
			t.Fatal(err)
		}
		if r, err = h.Drive(ctx, r.ID, host.DriveOptions{}); err != nil || r.Status != store.RunSuspended {
			t.Fatalf("v1 %s: %v %s, want suspended on its timer", wf, err, r.Status)
		}
	}
	v2 := wasmbuild.Build(t, "./testdata/workflows/versions/v2")
	rec := &recorder{TB: t}
	r := CheckUpgrade(rec, st, v2, UpgradeOptions{})
	if len(rec.errors) != 1 || r.Broken != 1 || len(r.Runs) != 2 {
		t.Fatalf("want one error for the one broken run: %q, %s", rec.errors, r.Summary())
	}
	for _, want := range []string{"1 WOULD BREAK", `code mismatch at key "1": recorded "create_vm", the new code: audit`} {
		if !strings.Contains(rec.errors[0], want) {
			t.Errorf("error lacks %q:\n%s", want, rec.errors[0])
		}
	}
	rec = &recorder{TB: t}
	if r := CheckUpgrade(rec, st, v2, UpgradeOptions{Workflow: "named"}); len(rec.errors) != 0 || !r.OK() || len(r.Runs) != 1 {
		t.Fatalf("named: %q %s", rec.errors, r.Summary())
	}
}
