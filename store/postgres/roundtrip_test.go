package postgres_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/postgres"
)

// countingConn counts the round trips made over a connection: a write
// that follows a read (or opens the connection) starts one.
type countingConn struct {
	net.Conn
	c *tripCounter
}

// tripCounter counts the round trips of every countingConn it made.
type tripCounter struct {
	mu      sync.Mutex
	trips   int
	reading map[*countingConn]bool // the last operation was a read
}

func (c *tripCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, c: c}, nil
}

// count returns the round trips counted so far.
func (c *tripCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips
}

func (cc *countingConn) Write(p []byte) (int, error) {
	c := cc.c
	c.mu.Lock()
	if r, seen := c.reading[cc]; r || !seen {
		c.trips++
	}
	c.reading[cc] = false
	c.mu.Unlock()
	return cc.Conn.Write(p)
}

func (cc *countingConn) Read(p []byte) (int, error) {
	n, err := cc.Conn.Read(p)
	if n > 0 {
		cc.c.mu.Lock()
		cc.c.reading[cc] = true
		cc.c.mu.Unlock()
	}
	return n, err
}

// TestCommitRoundTrips counts the round trips of the commits a durable
// call makes (a fenced batch settling one call and recording the next
// one pending, with the run's update), and of a commit that creates a
// run: once a shape has been seen (its statements prepared on the
// connection), each is one round trip.
func TestCommitRoundTrips(t *testing.T) {
	dsn := freshSchema(t)
	tc := &tripCounter{reading: map[*countingConn]bool{}}
	db, err := postgres.OpenDial(t.Context(), dsn, postgres.Options{MaxConns: 1}, tc.dial)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	now := time.Now()
	c, _, err := db.CreateClaimedRun(ctx, store.Run{ID: "r", ModuleHash: "m", Workflow: "w", Status: store.RunRunning}, "me", now.UnixNano(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	call := func(i int) store.Batch {
		run := c.Run
		run.Status = store.RunRunning
		return store.Batch{
			Fence: &c.Lease,
			Outcomes: []store.RunOutcome{
				{RunID: "r", Outcome: store.Outcome{Key: fmt.Sprintf("t%d", i), Kind: "call", Function: "f", Status: store.OutcomeOK, Value: []byte(`1`), Seq: int64(i)}},
				{RunID: "r", Outcome: store.Outcome{Key: fmt.Sprintf("t%d", i+1), Kind: "call", Function: "f", Status: store.OutcomePending}},
			},
			Runs: []store.Run{run},
		}
	}
	create := func(i int) store.Batch {
		return store.Batch{Creates: []store.Run{{ID: fmt.Sprintf("c%d", i), ModuleHash: "m", Workflow: "w"}}}
	}
	for name, shape := range map[string]func(int) store.Batch{"call": call, "create": create} {
		if err := db.Commit(ctx, shape(1)); err != nil { // prepares the shape's statements
			t.Fatal(err)
		}
		const n = 5
		before := tc.count()
		for i := 2; i < 2+n; i++ {
			if err := db.Commit(ctx, shape(i)); err != nil {
				t.Fatal(err)
			}
		}
		if got := tc.count() - before; got != n {
			t.Errorf("%d commits of a %s batch made %d round trips, want %d (one each)", n, name, got, n)
		}
	}
}
