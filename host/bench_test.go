package host

import (
	"context"
	"flag"
	"fmt"
	"testing"

	"github.com/skeinrun/skein/store"
)

const benchSteps = 10000

// BenchmarkSequentialSteps runs one workflow of 10,000 no-op steps per
// iteration, live, recording every outcome in SQLite (durability normal).
func BenchmarkSequentialSteps(b *testing.B) {
	h := newTestHost(b, Config{Evict: EvictNever, DisableInterrupt: benchNoInterrupt})
	m := h.deploy(b, "./examples/sequence")
	input := fmt.Sprintf(`{"n":%d}`, benchSteps)
	h.runToEnd(b, m, "sequence", input, "warm") // compile, warm caches
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := h.runToEnd(b, m, "sequence", input, fmt.Sprint("seq-", i))
		if r.Status != store.RunCompleted {
			b.Fatal(r.Status, r.Error)
		}
	}
	b.ReportMetric(float64(b.N*benchSteps)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkReplay replays a stored 10,000-step history from the top per
// iteration (a new instance, every outcome delivered from the journal).
func BenchmarkReplay(b *testing.B) {
	h := newTestHost(b, Config{Evict: EvictNever, DisableInterrupt: benchNoInterrupt})
	m := h.deploy(b, "./examples/sequence")
	r := h.runToEnd(b, m, "sequence", fmt.Sprintf(`{"n":%d}`, benchSteps), "history")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rr, err := h.Replay(ctx, r.ID)
		if err != nil || string(rr.Result) != string(r.Result) {
			b.Fatal(err, string(rr.Result))
		}
	}
	b.ReportMetric(float64(b.N*benchSteps)/b.Elapsed().Seconds(), "steps/s")
}

// benchNoInterrupt measures without wazero's close-on-context-done
// instrumentation: go test -bench . -args -nointerrupt
var benchNoInterrupt bool

func init() {
	flag.BoolVar(&benchNoInterrupt, "nointerrupt", false, "benchmarks: run guests without interrupt checks")
}
