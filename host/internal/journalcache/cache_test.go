package journalcache

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/memory"
)

// TestJournalCacheFollowsStore: two hosts' journal caches over one store
// take turns at a run in a random sequence of claims (leases expire and
// are taken over), renewals, fenced commits (new, settled, late pending and
// refused outcomes, some releasing the lease; late in the sequence one
// may complete the run, after which every write is refused), releases and
// reads, as a drive or a verifying replay reads. Every
// read through either cache must equal the store's, and the caches must
// have answered from memory, from both sides of a takeover.
func TestJournalCacheFollowsStore(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { journalCacheModel(t, seed) })
	}
}

func journalCacheModel(t *testing.T, seed uint64) {
	ctx := context.Background()
	st := memory.New()
	if _, _, err := st.CreateRun(ctx, store.Run{ID: "r", ModuleHash: "h", Workflow: "w"}); err != nil {
		t.Fatal(err)
	}
	ws := [2]*Store{New(st, DefaultBytes, false), New(st, DefaultBytes, false)}
	var leases [2]store.Lease
	rng := rand.New(rand.NewPCG(seed, 7))
	now, seq := int64(1), int64(0)
	for _, w := range ws {
		w.c.now = func() int64 { return now }
	}
	for step := range 4000 {
		i := rng.IntN(2)
		w := ws[i]
		now += rng.Int64N(3) // leases of 10 expire as now moves on
		switch op := rng.IntN(8); {
		case op == 0:
			cr, err := w.ClaimRun(ctx, "r", fmt.Sprint("w", i), now, 10)
			if err == nil {
				leases[i] = cr.Lease
			}
		case op == 1 && leases[i].Token != 0 && rng.IntN(2) == 0:
			if err := w.ReleaseLease(ctx, leases[i]); err == nil {
				leases[i] = store.Lease{}
			}
		case op == 1 && leases[i].Token != 0:
			_ = w.RenewLease(ctx, leases[i], now+10) // fails once the lease was taken
		case op <= 4 && leases[i].Token != 0:
			l := leases[i]
			b := store.Batch{Fence: &l, Release: rng.IntN(5) == 0}
			for range 1 + rng.IntN(3) {
				b.Outcomes = append(b.Outcomes, store.RunOutcome{RunID: "r", Outcome: randomOutcome(rng, now, &seq)})
			}
			if step > 3000 && rng.IntN(10) == 0 { // the run completes; its journal closes
				b.Runs = []store.Run{{ID: "r", ModuleHash: "h", Workflow: "w", Status: store.RunCompleted, Result: []byte(`1`)}}
			}
			if err := w.Commit(ctx, b); err == nil && b.Release {
				leases[i] = store.Lease{}
			}
		default:
			read := w.Outcomes
			if r, err := st.Run(ctx, "r"); err == nil && r.Status.Final() && rng.IntN(2) == 0 {
				read = w.FinalOutcomes // as a verifying replay reads
			}
			got, err := read(ctx, "r")
			if err != nil {
				t.Fatalf("step %d: read through cache %d: %v", step, i, err)
			}
			want, err := st.Outcomes(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("step %d: cache %d read %d outcomes, the store holds %d", step, i, len(got), len(want))
			}
			for k := range got {
				if !storedAlike(got[k], want[k]) {
					t.Fatalf("step %d: cache %d: outcome %d is %+v, the store holds %+v", step, i, k, got[k], want[k])
				}
			}
		}
	}
	for i, w := range ws {
		if memory, stored := w.Loads(); memory == 0 || stored == 0 {
			t.Errorf("cache %d: %d reads from memory, %d from the store; want both", i, memory, stored)
		}
	}
}

// randomOutcome is an outcome at one of a few keys: pending, or settled
// with the next seq (a settled key settled again is refused by the store,
// a pending one written after it is ignored), sometimes with a schema;
// or, settled, at a new key.
func randomOutcome(rng *rand.Rand, now int64, seq *int64) store.Outcome {
	o := store.Outcome{Key: fmt.Sprint("k", rng.IntN(12)), Kind: "step", Function: "f", Status: store.OutcomePending,
		Attempts: 1 + rng.IntN(3), UpdatedAt: time.Unix(0, now), StartedAt: rng.Int64N(3)}
	if rng.IntN(2) == 0 {
		*seq++
		o.Status, o.Seq, o.Value, o.SettledAt = store.OutcomeOK, *seq, json.RawMessage(fmt.Sprint(*seq)), now
		if rng.IntN(4) == 0 { // a new key: the journal grows to the end
			o.Key = fmt.Sprint("n", *seq)
		}
	}
	if rng.IntN(4) == 0 {
		o.Schema = []byte(`{"type":"integer"}`)
	}
	return o
}

// TestJournalCacheReadRacesCommit: a journal read from the store while a
// commit of the run starts and ends is not kept (it may predate the
// commit), reads while a commit is in flight go to the store, and so do
// reads under an expired lease.
func TestJournalCacheReadRacesCommit(t *testing.T) {
	c := newCache(DefaultBytes)
	l := store.Lease{RunID: "r", Owner: "w", Token: 1, Expiry: c.now() + int64(time.Hour)}
	c.claimed(l)
	b := store.Batch{Fence: &l, Outcomes: []store.RunOutcome{{RunID: "r", Outcome: store.Outcome{Key: "1", Status: store.OutcomeOK, Seq: 1, UpdatedAt: time.Now()}}}}
	_, token, gen, ok := c.get("r")
	if ok || token != 1 {
		t.Fatalf("get of an empty cache: ok %v, token %d; want a miss to keep under lease 1", ok, token)
	}
	c.committing(b)
	c.committed(b, true)
	c.put("r", token, gen, nil) // read before the commit: stale
	if _, _, _, ok := c.get("r"); ok {
		t.Fatal("a read that raced a commit was kept")
	}
	c.committing(b)
	if _, token, _, ok := c.get("r"); ok || token != 0 {
		t.Fatalf("a read during a commit: ok %v, token %d; want neither an answer nor a keep", ok, token)
	}
	c.committed(b, true)
	_, token, gen, _ = c.get("r")
	c.put("r", token, gen, []store.Outcome{b.Outcomes[0].Outcome})
	if outs, _, _, ok := c.get("r"); !ok || len(outs) != 1 {
		t.Fatalf("a read after the commits: ok %v, %d outcomes; want it kept", ok, len(outs))
	}

	// An expired lease may have been taken by another worker: no answer,
	// until a renewal that succeeded.
	now := c.now()
	c.now = func() int64 { return now + int64(2*time.Hour) }
	if _, _, _, ok := c.get("r"); ok {
		t.Fatal("a journal was answered under an expired lease")
	}
	c.renewed(l, now+int64(3*time.Hour))
	if _, _, _, ok := c.get("r"); !ok {
		t.Fatal("a journal was not answered after its lease was renewed")
	}
}

// TestJournalCacheBudget: the byte budget bounds the journals kept, empty
// ones too, least recently used out first.
func TestJournalCacheBudget(t *testing.T) {
	c := newCache(3 * journalOverhead)
	for i := range 5 {
		run := fmt.Sprint("r", i)
		c.claimed(store.Lease{RunID: run, Owner: "w", Token: 1, Expiry: c.now() + int64(time.Hour)})
		c.put(run, 1, 0, nil)
	}
	if len(c.entries) != 3 || c.size != 3*journalOverhead {
		t.Fatalf("%d journals, %d bytes kept; want 3, %d", len(c.entries), c.size, 3*journalOverhead)
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, _, _, ok := c.get(fmt.Sprint("r", i)); ok != want {
			t.Errorf("r%d kept: %v, want %v", i, ok, want)
		}
	}
}
