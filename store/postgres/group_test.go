package postgres_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/postgres"
)

// queuedGroup holds db's only connection, starts a commit of first (which
// the writer takes up and then waits for the connection) and then one of
// each of rest, returns once all of rest wait for the writer, and returns
// the channels of their answers (first's last) and release, which lets
// the connection go.
func queuedGroup(t *testing.T, db *postgres.DB, first store.Batch, rest []store.Batch) ([]chan error, func()) {
	t.Helper()
	release, err := postgres.HoldConn(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(b store.Batch) chan error {
		c := make(chan error, 1)
		go func() { c <- db.Commit(t.Context(), b) }()
		return c
	}
	taken := postgres.Taken(db)
	firstDone := commit(first)
	for postgres.Taken(db) != taken+1 {
		time.Sleep(time.Millisecond)
	}
	var done []chan error
	for i, b := range rest {
		done = append(done, commit(b))
		for postgres.Waiting(db) != i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	return append(done, firstDone), release
}

func createBatch(id string) store.Batch {
	return store.Batch{Creates: []store.Run{{ID: id, ModuleHash: "m", Workflow: "w"}}}
}

// TestGroupCommit makes the writer send a group of batches, one of which
// creates a run that exists and one of which is fenced by a lost lease:
// those two fail with the errors they would get alone and the others
// commit.
func TestGroupCommit(t *testing.T) {
	dsn := freshSchema(t)
	db, err := postgres.Open(t.Context(), dsn, postgres.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	c, _, err := db.CreateClaimedRun(ctx, store.Run{ID: "r", ModuleHash: "m", Workflow: "w", Status: store.RunRunning}, "me", time.Now().UnixNano(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(ctx, createBatch("x")); err != nil {
		t.Fatal(err)
	}
	stale := c.Lease
	stale.Token++
	outcome := func(l store.Lease, key string) store.Batch {
		return store.Batch{Fence: &l, Outcomes: []store.RunOutcome{{RunID: "r", Outcome: store.Outcome{Key: key, Kind: "call", Function: "f", Status: store.OutcomePending}}}}
	}
	const n = 8
	var rest []store.Batch
	for i := range n {
		rest = append(rest, createBatch(fmt.Sprintf("c%d", i)))
	}
	rest[2] = createBatch("x")       // exists
	rest[5] = outcome(stale, "lost") // a lease lost
	rest = append(rest, outcome(c.Lease, "kept"))
	done, release := queuedGroup(t, db, createBatch("first"), rest)
	release()
	for i, ch := range done {
		err := <-ch
		switch i {
		case 2:
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("create of an existing run: %v, want ErrConflict", err)
			}
		case 5:
			if !errors.Is(err, store.ErrLeaseLost) {
				t.Errorf("commit under a lost lease: %v, want ErrLeaseLost", err)
			}
		default:
			if err != nil {
				t.Errorf("batch %d: %v", i, err)
			}
		}
	}
	for i := range n {
		_, err := db.Run(ctx, fmt.Sprintf("c%d", i))
		if want := i != 2 && i != 5; (err == nil) != want {
			t.Errorf("run c%d: %v; want it stored: %v", i, err, want)
		}
	}
	o, err := db.Outcomes(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, x := range o {
		keys[x.Key] = true
	}
	if !keys["kept"] || keys["lost"] {
		t.Errorf("outcomes of r: %v, want kept and not lost", keys)
	}
}

// TestGroupCommitRoundTrips checks that batches waiting together take one
// round trip, not one each.
func TestGroupCommitRoundTrips(t *testing.T) {
	dsn := freshSchema(t)
	tc := &tripCounter{reading: map[*countingConn]bool{}}
	db, err := postgres.OpenDial(t.Context(), dsn, postgres.Options{MaxConns: 1}, tc.dial)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Commit(t.Context(), createBatch("prepare")); err != nil {
		t.Fatal(err)
	}
	const n = 10
	var rest []store.Batch
	for i := range n {
		rest = append(rest, createBatch(fmt.Sprintf("c%d", i)))
	}
	done, release := queuedGroup(t, db, createBatch("first"), rest)
	before := tc.count()
	release()
	for i, ch := range done {
		if err := <-ch; err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	}
	if got := tc.count() - before; got != 2 {
		t.Errorf("%d concurrent commits took %d round trips, want 2 (the first, then the rest as one group)", n+1, got)
	}
}

// TestCloseWhileCommitsWait closes the store while batches wait for the
// writer: they fail with ErrClosed and leave nothing, and the one in
// flight commits.
func TestCloseWhileCommitsWait(t *testing.T) {
	dsn := freshSchema(t)
	db, err := postgres.Open(t.Context(), dsn, postgres.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	var rest []store.Batch
	for i := range n {
		rest = append(rest, createBatch(fmt.Sprintf("c%d", i)))
	}
	done, release := queuedGroup(t, db, createBatch("first"), rest)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	for i, ch := range done[:n] {
		if err := <-ch; !errors.Is(err, postgres.ErrClosed) {
			t.Errorf("batch %d waiting at Close: %v, want ErrClosed", i, err)
		}
	}
	release()
	if err := <-done[n]; err != nil {
		t.Errorf("batch in flight at Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	db2 := open(t, dsn)
	defer db2.Close()
	if _, err := db2.Run(t.Context(), "first"); err != nil {
		t.Errorf("run of the batch in flight: %v", err)
	}
	for i := range n {
		if _, err := db2.Run(t.Context(), fmt.Sprintf("c%d", i)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("run c%d of a batch failed by Close: %v, want ErrNotFound", i, err)
		}
	}
}
