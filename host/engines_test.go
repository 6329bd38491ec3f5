package host

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/sqlite"
)

// TestEngineChoice: Config.Engine picks the engine; an unknown one, or
// wasmtime in a binary built without it, fails New with a message that
// names the field and the flag (and says how to build with wasmtime).
func TestEngineChoice(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "skein.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = New(ctx, Config{Store: st, Engine: "v8"})
	if want := `host: unknown engine "v8" (Config.Engine; --engine): want "wazero" or "wasmtime"`; err == nil || err.Error() != want {
		t.Errorf("engine v8: %v; want %s", err, want)
	}
	h, err := New(ctx, Config{Store: st, Engine: EngineWasmtime})
	if !engine.HasWasmtime {
		want := "host: Config.Engine \"wasmtime\" (--engine): engine \"wasmtime\" is not in this binary: build skein with it: `go build -tags wasmtime ./cmd/skein` (needs cgo: CGO_ENABLED=1 and a C compiler)"
		if err == nil || err.Error() != want {
			t.Errorf("wasmtime without the build tag: %v; want %s", err, want)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if n := engine.Name(h.eng); n != EngineWasmtime {
		t.Errorf("Config.Engine wasmtime gave engine %q", n)
	}
}

// TestSuiteEngine: the hosts of this package's tests run on the engine
// SKEIN_TEST_ENGINE names (wazero when unset), so that the suite proves
// one behaviour on both (make test-wasmtime).
func TestSuiteEngine(t *testing.T) {
	h := newTestHost(t, Config{Evict: EvictNever})
	want := testEngine
	if want == "" {
		want = EngineWazero
	}
	if n := engine.Name(h.eng); n != want {
		t.Fatalf("the test hosts run on %q; SKEIN_TEST_ENGINE asks for %q", n, want)
	}
	m := h.deploy(t, "./examples/sequence")
	if r := h.runToEnd(t, m, "sequence", `{"n":10}`, "suite-engine"); r.Status != store.RunCompleted || string(r.Result) != "55" {
		t.Errorf("sequence on %s: %s %s %q", want, r.Status, r.Result, r.Error)
	}
	t.Logf("engine %s", strings.TrimSpace(want))
}
