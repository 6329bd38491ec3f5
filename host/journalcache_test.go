package host

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
	ms := [2]*metrics{newMetrics(), newMetrics()}
	ws := [2]journalStore{{Store: st, c: newJournalCache(DefaultJournalCacheBytes, ms[0])}, {Store: st, c: newJournalCache(DefaultJournalCacheBytes, ms[1])}}
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
				read = w.finalOutcomes // as a verifying replay reads
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
	for i, m := range ms {
		if m.journalLoads[0].Load() == 0 || m.journalLoads[1].Load() == 0 {
			t.Errorf("cache %d: %d reads from memory, %d from the store; want both", i, m.journalLoads[0].Load(), m.journalLoads[1].Load())
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
	c := newJournalCache(DefaultJournalCacheBytes, newMetrics())
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

// TestJournalCacheReplay: a run that suspends on a promise replays from the
// journal this host kept; a second host that drives the run in between
// makes the first read the store again. A completed run's journal is kept
// for verifying replays.
func TestJournalCacheReplay(t *testing.T) {
	ctx := context.Background()
	h := newTestHost(t, Config{})
	m := h.deploy(t, "./testdata/workflows/server")
	loads := func(h *Host) [2]uint64 {
		return [2]uint64{h.metrics.journalLoads[0].Load(), h.metrics.journalLoads[1].Load()}
	}
	drive := func(h *Host, id string, want store.RunStatus) {
		t.Helper()
		r, err := h.Drive(ctx, id, DriveOptions{})
		if err != nil || r.Status != want {
			t.Fatalf("drive %s: %s, %v; want %s", id, r.Status, err, want)
		}
	}
	start := func(id string) {
		t.Helper()
		if _, err := h.Start(ctx, StartOptions{Module: m.Hash, Workflow: "waiter", ID: id}); err != nil {
			t.Fatal(err)
		}
		drive(h.Host, id, store.RunSuspended)
	}
	resolve := func(id string) {
		t.Helper()
		if err := h.Resolve(ctx, id+".approve", json.RawMessage(`"yes"`), ""); err != nil {
			t.Fatal(err)
		}
	}

	start("same")
	resolve("same")
	before := loads(h.Host)
	drive(h.Host, "same", store.RunCompleted)
	if got := loads(h.Host); got[0] != before[0]+1 || got[1] != before[1] {
		t.Errorf("the replay after a suspension loaded %d journals from memory and %d from the store; want 1 and 0", got[0]-before[0], got[1]-before[1])
	}

	// Another host (a second worker on the same store) drives the run
	// once, between two drives of the first: then the first must not
	// trust what it kept, and reads the store.
	start("taken")
	other, err := newHost(ctx, Config{Store: h.st, CacheDir: cacheDir}, testHooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	drive(other, "taken", store.RunSuspended)
	resolve("taken")
	before = loads(h.Host)
	r, err := h.Drive(ctx, "taken", DriveOptions{})
	if err != nil || r.Status != store.RunCompleted || string(r.Result) != `"approved: yes"` {
		t.Fatalf("drive taken after the other host: %s %s, %v", r.Status, r.Result, err)
	}
	if got := loads(h.Host); got[0] != before[0] || got[1] != before[1]+1 {
		t.Errorf("a run another host drove since loaded %d journals from memory and %d from the store; want 0 and 1", got[0]-before[0], got[1]-before[1])
	}

	// A completed run's journal is closed: the host that completed it
	// keeps it, and a verifying replay reads it from memory; another
	// host reads it from the store once, then from memory.
	replay := func(h *Host, id string, want [2]uint64) {
		t.Helper()
		before := loads(h)
		rr, err := h.Replay(ctx, id)
		if err != nil || rr.Status != store.RunCompleted || string(rr.Result) != `"approved: yes"` {
			t.Fatalf("replay %s: %+v, %v", id, rr, err)
		}
		if got := loads(h); got[0]-before[0] != want[0] || got[1]-before[1] != want[1] {
			t.Errorf("a verifying replay of %s loaded %d journals from memory and %d from the store; want %d and %d", id, got[0]-before[0], got[1]-before[1], want[0], want[1])
		}
	}
	replay(h.Host, "same", [2]uint64{1, 0})
	replay(h.Host, "taken", [2]uint64{1, 0})
	replay(other, "same", [2]uint64{0, 1})
	replay(other, "same", [2]uint64{1, 0})
}

// TestJournalCacheBudget: the byte budget bounds the journals kept, empty
// ones too, least recently used out first.
func TestJournalCacheBudget(t *testing.T) {
	c := newJournalCache(3*journalOverhead, newMetrics())
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
