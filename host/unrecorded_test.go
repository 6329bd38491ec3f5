package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skeinrun/skein/store"
)

// commitFailStore fails the failAt-th commit of the drives of run id (1
// is the first), once.
type commitFailStore struct {
	store.Store
	id      string
	failAt  int64
	commits atomic.Int64
}

var errCommitLost = errors.New("simulated: the commit did not reach the disk")

func (s *commitFailStore) Commit(ctx context.Context, b store.Batch) error {
	if b.Fence != nil && b.Fence.RunID == s.id && s.commits.Add(1) == s.failAt {
		return errCommitLost
	}
	return s.Store.Commit(ctx, b)
}

// TestCommitFailureIsNotTheRuns: a commit of a run's records that fails
// in the middle of an execution fails the drive with the store's error,
// not the run: the run stays running with what was committed before, and
// the next drive replays that and completes it. The same for the very
// first commit of a new run, which carries its running status.
func TestCommitFailureIsNotTheRuns(t *testing.T) {
	for _, failAt := range []int64{1, 3} {
		t.Run(fmt.Sprint("commit", failAt), func(t *testing.T) {
			ctx := context.Background()
			id := fmt.Sprint("lost-", failAt)
			fs := &commitFailStore{Store: openSQLite(t), id: id, failAt: failAt}
			h := newLeaseHost(t, fs, &counters{bodies: map[string]int{}}, nil)
			startChain(t, h, id, 4)
			r, err := h.Drive(ctx, id, DriveOptions{})
			if !errors.Is(err, errCommitLost) {
				t.Fatalf("drive with commit %d lost: %s, %v; want the commit's error", failAt, r.Status, err)
			}
			got := mustRunStatus(t, fs, id)
			if want := map[int64]store.RunStatus{1: store.RunPending, 3: store.RunRunning}[failAt]; got.Status != want {
				t.Errorf("run after commit %d was lost: %s (%s); want %s", failAt, got.Status, got.Error, want)
			}
			r, err = h.Drive(ctx, id, DriveOptions{})
			if err != nil || r.Status != store.RunCompleted || string(r.Result) != "10" {
				t.Fatalf("drive again: %s %s, %v; want completed 10", r.Status, r.Result, err)
			}
		})
	}
}

// textFailStore refuses, as a backend refuses a text it cannot hold,
// every commit of run id's outcomes from the failAt-th on.
type textFailStore struct {
	store.Store
	id      string
	failAt  int64
	commits atomic.Int64
}

func (s *textFailStore) Commit(ctx context.Context, b store.Batch) error {
	if b.Fence != nil && b.Fence.RunID == s.id && len(b.Outcomes) > 0 && s.commits.Add(1) >= s.failAt {
		return &store.TextError{Field: "outcome \"2\" of run " + s.id + ": error", Text: "a\x00b", At: 1}
	}
	return s.Store.Commit(ctx, b)
}

// TestUnstorableRecordsEndTheRun: when the store refuses a run's records
// for what they hold (store.ErrInvalidText: no later drive could commit
// them either), the run ends failed with that cause, and what was
// committed before stays; it is not driven again for ever.
func TestUnstorableRecordsEndTheRun(t *testing.T) {
	ctx := context.Background()
	fs := &textFailStore{Store: openSQLite(t), id: "unstorable", failAt: 2}
	h := newLeaseHost(t, fs, &counters{bodies: map[string]int{}}, nil)
	startChain(t, h, "unstorable", 4)
	r, err := h.Drive(ctx, "unstorable", DriveOptions{})
	if err != nil || r.Status != store.RunFailed || !strings.HasPrefix(r.Error, unstorablePrefix) || !strings.Contains(r.Error, `"a\x00b"`) {
		t.Fatalf("drive: %s (%q), %v; want failed, with the store's refusal as its error", r.Status, r.Error, err)
	}
	got := mustRunStatus(t, fs, "unstorable")
	if got.Status != store.RunFailed || got.Error != r.Error || got.LeaseOwner != "" {
		t.Errorf("stored run: %s (%q), lease %q; want failed with the drive's error, released", got.Status, got.Error, got.LeaseOwner)
	}
	outs, err := fs.Outcomes(ctx, "unstorable")
	if err != nil || len(outs) == 0 {
		t.Errorf("outcomes: %d, %v; want what the first commit recorded, kept", len(outs), err)
	}
}
