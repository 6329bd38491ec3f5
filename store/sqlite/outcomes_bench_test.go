package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// BenchmarkOutcomes measures Outcomes of one run whose journal holds
// 10,000 settled outcomes with values of 40 bytes: what a replay of a
// long run reads before it starts.
func BenchmarkOutcomes(b *testing.B) {
	const n = 10_000
	d, _ := openFile(b, Options{})
	defer d.Close()
	ctx := context.Background()
	if _, _, err := d.CreateRun(ctx, store.Run{ID: "r", ModuleHash: "h", Workflow: "w"}); err != nil {
		b.Fatal(err)
	}
	outs := make([]store.RunOutcome, n)
	now := time.Now().UnixNano()
	for i := range outs {
		outs[i] = store.RunOutcome{RunID: "r", Outcome: store.Outcome{
			Key: fmt.Sprintf("t0.%d", i), Kind: "step", Function: "fetch", Status: store.OutcomeOK,
			Value: fmt.Appendf(nil, `{"status":200,"body":"hel","n":%08d}`, i), Attempts: 1, Seq: int64(i + 1),
			VTime: now, StartedAt: now, SettledAt: now,
		}}
	}
	if len(outs[0].Outcome.Value) != 40 {
		b.Fatalf("value of %d bytes, want 40", len(outs[0].Outcome.Value))
	}
	if err := d.Commit(ctx, store.Batch{Outcomes: outs}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		got, err := d.Outcomes(ctx, "r")
		if err != nil || len(got) != n {
			b.Fatalf("Outcomes = %d outcomes, %v; want %d", len(got), err, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "outcomes/s")
}

// BenchmarkCommitSteps measures the writer: batches of 32 new settled
// outcomes of one run, each batch committed alone, as a sequential run's
// steps reach the store. The figure is the cost of one outcome row.
func BenchmarkCommitSteps(b *testing.B) {
	const batch = 32
	d, _ := openFile(b, Options{})
	defer d.Close()
	ctx := context.Background()
	if _, _, err := d.CreateRun(ctx, store.Run{ID: "r", ModuleHash: "h", Workflow: "w"}); err != nil {
		b.Fatal(err)
	}
	for n := 0; b.Loop(); n++ {
		if err := d.Commit(ctx, store.Batch{Outcomes: outcomes("r", fmt.Sprintf("t%d", n), n*batch, batch)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(batch*b.N), "ns/outcome")
}
