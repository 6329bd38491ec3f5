package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skeinrun/skein/internal/limitflags"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

const continueModule = "./testdata/workflows/continue"

type loopState struct{ N, Per, Total, Runs int }

// A loop that continues every 5 steps runs as a chain cnt, cnt~2, cnt~3:
// each run continued holds 5 journal records and its successor's input
// as its result; the successor has that input, the same module and
// workflow; the last run completes with the carried state.
func TestContinueAsNewChain(t *testing.T) {
	h := newTestHost(t, Config{})
	m := h.deploy(t, continueModule)
	ctx := context.Background()
	r := h.runToEnd(t, m, "loop", `{"per":5,"total":12}`, "cnt")
	ids := []string{"cnt", "cnt~2", "cnt~3"}
	for i, id := range ids {
		if i > 0 {
			var err error
			if r, err = h.Drive(ctx, id, DriveOptions{WaitTimers: true}); err != nil {
				t.Fatal(err)
			}
		}
		var st loopState
		mustJSON(t, r.Result, &st)
		wantN, wantStatus := min(5*(i+1), 12), store.RunContinued
		if i == 2 {
			wantStatus = store.RunCompleted
		}
		if r.Status != wantStatus || st.N != wantN || st.Runs != i+1 {
			t.Fatalf("run %s: %s %s %q, want %s with n=%d runs=%d", id, r.Status, r.Result, r.Error, wantStatus, wantN, i+1)
		}
		if n := len(h.outcomes(t, id)); n != wantN-5*i {
			t.Errorf("run %s journal has %d records, want %d", id, n, wantN-5*i)
		}
		if wantStatus != store.RunContinued {
			continue
		}
		next, err := h.st.Run(ctx, ContinuedRunID(id))
		if err != nil {
			t.Fatalf("successor of %s: %v", id, err)
		}
		if next.ID != ids[i+1] || string(next.Input) != string(r.Result) || next.ModuleHash != m.Hash ||
			next.Workflow != "loop" || next.Parent != "" || next.Status != store.RunPending {
			t.Errorf("successor of %s = %+v, want %s pending with input %s", id, next, ids[i+1], r.Result)
		}
		if from := ContinuedFromID(next.ID); from != id {
			t.Errorf("ContinuedFromID(%s) = %q, want %q", next.ID, from, id)
		}
	}
	if _, err := h.st.Run(ctx, "cnt~4"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("run cnt~4: %v, want none (the chain completed)", err)
	}
}

// failCreates fails every commit that creates a run while armed.
type failCreates struct {
	store.Store
	armed atomic.Bool
}

var errInjected = errors.New("injected commit failure")

func (s *failCreates) Commit(ctx context.Context, b store.Batch) error {
	if len(b.Creates) > 0 && s.armed.Load() {
		return errInjected
	}
	return s.Store.Commit(ctx, b)
}

// The run's end as continued and its successor's creation are one
// commit: when that commit fails, the run is not continued and no
// successor exists; when it succeeds, both are stored.
func TestContinueAsNewAtomic(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := &failCreates{Store: db}
	h, err := newHost(ctx, Config{Store: st, CacheDir: cacheDir}, withTestDefaults(testHooks{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(ctx); db.Close() })
	wasm, err := os.ReadFile(wasmbuild.Build(t, continueModule))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Deploy(ctx, "continue", wasm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "loop", Input: json.RawMessage(`{"per":2,"total":3}`), ID: "at"}); err != nil {
		t.Fatal(err)
	}
	st.armed.Store(true)
	if _, err := h.Drive(ctx, "at", DriveOptions{}); !errors.Is(err, errInjected) {
		t.Fatalf("drive with the ending commit failing: %v, want the injected failure", err)
	}
	if r, _ := db.Run(ctx, "at"); r.Status == store.RunContinued {
		t.Errorf("run at is continued after its ending commit failed")
	}
	if _, err := db.Run(ctx, "at~2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("successor at~2 after the failed commit: %v, want ErrNotFound", err)
	}
	st.armed.Store(false)
	r, err := h.Drive(ctx, "at", DriveOptions{})
	if err != nil || r.Status != store.RunContinued {
		t.Fatalf("drive again: %s, %v; want continued", r.Status, err)
	}
	if next, err := db.Run(ctx, "at~2"); err != nil || string(next.Input) != `{"n":2,"per":2,"total":3,"runs":1}` {
		t.Errorf("successor at~2 = %s, %v; want it with the carried state", next.Input, err)
	}
}

// A run whose journal passes Config.MaxJournalOps without continuing
// fails with an error naming the limit, its flag and skein.ContinueAsNew.
func TestMaxJournalOps(t *testing.T) {
	h := newTestHost(t, Config{MaxJournalOps: 100})
	m := h.deploy(t, continueModule)
	r := h.runToEnd(t, m, "grow", `{}`, "big")
	want := "the run's journal passed 100 durable ops without continuing as new; a workflow that loops for long should call skein.ContinueAsNew every so many iterations, carrying its state in the input (limit Config.MaxJournalOps = 100; --max-journal-ops)"
	if r.Status != store.RunFailed || r.Error != want {
		t.Fatalf("run big: %s %q, want failed with %q", r.Status, r.Error, want)
	}
	if limitflags.Flag("MaxJournalOps") != "--max-journal-ops" {
		t.Errorf("no flag for MaxJournalOps")
	}
	// Under the limit, continuing, the same number of steps is fine.
	r = h.runToEnd(t, m, "loop", `{"per":60,"total":150}`, "ok")
	if r.Status != store.RunContinued {
		t.Errorf("loop of 60 steps a run: %s %q, want continued", r.Status, r.Error)
	}
}

// A child run cannot continue as new; a promise of a continued run is
// refused with an error naming its successor.
func TestContinueAsNewRefusals(t *testing.T) {
	h := newTestHost(t, Config{})
	m := h.deploy(t, continueModule)
	ctx := context.Background()
	r := h.runToEnd(t, m, "parent", `{}`, "par")
	if r.Status != store.RunFailed || !strings.Contains(r.Error, "a child run cannot continue as new") {
		t.Errorf("parent of a continuing child: %s %q, want failed by the child's refusal", r.Status, r.Error)
	}
	r = h.runToEnd(t, m, "promised", `false`, "prom")
	if r.Status != store.RunContinued {
		t.Fatalf("run prom: %s %q, want continued", r.Status, r.Error)
	}
	err := h.Resolve(ctx, "prom.approve", json.RawMessage(`"yes"`), "")
	var ce *ContinuedError
	if !errors.As(err, &ce) || !errors.Is(err, ErrTerminal) || ce.Successor != "prom~2" ||
		!strings.Contains(err.Error(), "run prom has continued as new as run prom~2") {
		t.Errorf("resolve a promise of a continued run: %v, want a ContinuedError naming prom~2", err)
	}
	if _, err := h.Cancel(ctx, "prom", "x"); !errors.Is(err, ErrTerminal) {
		t.Errorf("cancel a continued run: %v, want ErrTerminal", err)
	}
}

func TestContinuedRunID(t *testing.T) {
	for id, want := range map[string]string{"a": "a~2", "a~2": "a~3", "a~9": "a~10", "a~x": "a~x~2", "a~1": "a~1~2", "a~02": "a~02~2"} {
		if got := ContinuedRunID(id); got != want {
			t.Errorf("ContinuedRunID(%q) = %q, want %q", id, got, want)
		}
	}
	for id, want := range map[string]string{"a": "", "a~2": "a", "a~10": "a~9", "a~x~2": "a~x"} {
		if got := ContinuedFromID(id); got != want {
			t.Errorf("ContinuedFromID(%q) = %q, want %q", id, got, want)
		}
	}
}
