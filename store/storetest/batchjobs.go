package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

func testBatchJob(id string, created int64) store.BatchJob {
	return store.BatchJob{ID: id, Where: "status = failed and ended > -2h", Filter: `status = failed and ended >= 2026-12-03T10:00:00Z`,
		Action: "cancel", Args: []byte(`{"reason":"bulk"}`), Rate: 50, Before: ts(created).UnixNano(), CreatedAt: ts(created)}
}

// testBatchJobs: a batch job is stored as given, listed newest first,
// and an id is stored once.
func testBatchJobs(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, id := range []string{"b1", "b3", "b2"} {
		if _, err := s.CreateBatchJob(ctx, testBatchJob(id, int64(10+i))); err != nil {
			t.Fatalf("CreateBatchJob(%s): %v", id, err)
		}
	}
	if _, err := s.CreateBatchJob(ctx, testBatchJob("b1", 20)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateBatchJob of an existing id: %v, want ErrConflict", err)
	}
	got, err := s.BatchJob(ctx, "b3")
	want := testBatchJob("b3", 11)
	want.Status = store.BatchRunning
	if err != nil || !reflect.DeepEqual(got.Args, want.Args) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("BatchJob(b3) = %+v, %v; want %+v", got, err, want)
	}
	got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BatchJob(b3):\n got  %+v\n want %+v", got, want)
	}
	if _, err := s.BatchJob(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("BatchJob(nope): %v, want ErrNotFound", err)
	}
	js, err := s.BatchJobs(ctx, 2)
	if err != nil || len(js) != 2 || js[0].ID != "b2" || js[1].ID != "b3" {
		t.Errorf("BatchJobs(2) = %v, %v; want b2, b3", batchIDs(js), err)
	}
	if _, err := s.CreateBatchJob(ctx, store.BatchJob{ID: "bad\x00", Action: "cancel"}); !errors.Is(err, store.ErrInvalidText) {
		t.Errorf("CreateBatchJob of a NUL id: %v, want ErrInvalidText", err)
	}
}

func batchIDs(js []store.BatchJob) []string {
	var ids []string
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	return ids
}

// testBatchJobLease: a running job is claimed by one worker at a time,
// the oldest first; its progress is saved only under the current lease;
// an expired lease is taken over with a greater token; an ended job is
// not claimed again; a cancellation is seen by the next save.
func testBatchJobLease(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now().UnixNano()
	for i, id := range []string{"old", "new"} {
		if _, err := s.CreateBatchJob(ctx, testBatchJob(id, int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	a, ok, err := s.ClaimBatchJob(ctx, "w1", now, time.Minute)
	if err != nil || !ok || a.ID != "old" || a.LeaseOwner != "w1" || a.LeaseToken != 1 || a.LeaseExpiry != now+int64(time.Minute) {
		t.Fatalf("ClaimBatchJob = %+v, %v, %v; want old for w1, token 1", a, ok, err)
	}
	b, ok, err := s.ClaimBatchJob(ctx, "w2", now, time.Minute)
	if err != nil || !ok || b.ID != "new" {
		t.Fatalf("second ClaimBatchJob = %s, %v, %v; want new", b.ID, ok, err)
	}
	if _, ok, err := s.ClaimBatchJob(ctx, "w3", now, time.Minute); ok || err != nil {
		t.Fatalf("ClaimBatchJob with every lease live = %v, %v; want none", ok, err)
	}
	a.Cursor, a.Selected, a.Done, a.Failed, a.StartedAt, a.ActedAt = "r7", 8, 7, 1, 5, 6
	a.Errors = []store.BatchError{{RunID: "r3", Error: "run r3 has ended"}}
	saved, err := s.SaveBatchJob(ctx, a, now+int64(2*time.Minute))
	if err != nil || saved.Cursor != "r7" || saved.Done != 7 || saved.LeaseExpiry != now+int64(2*time.Minute) || len(saved.Errors) != 1 {
		t.Fatalf("SaveBatchJob = %+v, %v", saved, err)
	}
	// The lease expires; w3 takes over; w1's save is refused.
	c, ok, err := s.ClaimBatchJob(ctx, "w3", now+int64(3*time.Minute), time.Minute)
	if err != nil || !ok || c.ID != "old" || c.LeaseToken != 2 || c.Cursor != "r7" || c.Done != 7 {
		t.Fatalf("ClaimBatchJob after the expiry = %+v, %v, %v; want old, token 2, from r7", c, ok, err)
	}
	a.Cursor = "r9"
	if _, err := s.SaveBatchJob(ctx, a, now); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("SaveBatchJob under a lost lease: %v, want ErrLeaseLost", err)
	}
	if j, _ := s.BatchJob(ctx, "old"); j.Cursor != "r7" {
		t.Errorf("a refused save wrote the cursor %q", j.Cursor)
	}
	// Cancel: the first reason wins, the next save returns it.
	if j, err := s.CancelBatchJob(ctx, "old", "stop"); err != nil || j.Cancel != "stop" {
		t.Fatalf("CancelBatchJob = %+v, %v", j, err)
	}
	if j, _ := s.CancelBatchJob(ctx, "old", "again"); j.Cancel != "stop" {
		t.Errorf("second CancelBatchJob reason = %q, want stop", j.Cancel)
	}
	saved, err = s.SaveBatchJob(ctx, c, now+int64(4*time.Minute))
	if err != nil || saved.Cancel != "stop" {
		t.Fatalf("SaveBatchJob after a cancel = %+v, %v; want the reason", saved, err)
	}
	c.Status, c.EndedAt = store.BatchCanceled, 9
	if saved, err = s.SaveBatchJob(ctx, c, now+int64(4*time.Minute)); err != nil || saved.LeaseOwner != "" || saved.Status != store.BatchCanceled {
		t.Fatalf("SaveBatchJob of the end = %+v, %v; want canceled, released", saved, err)
	}
	if j, ok, err := s.ClaimBatchJob(ctx, "w4", now+int64(time.Hour), time.Minute); err != nil || !ok || j.ID != "new" {
		t.Errorf("ClaimBatchJob after old ended = %s, %v, %v; want new (old ended)", j.ID, ok, err)
	}
	if j, err := s.CancelBatchJob(ctx, "old", "late"); err != nil || j.Cancel != "stop" || j.Status != store.BatchCanceled {
		t.Errorf("CancelBatchJob of an ended job = %+v, %v", j, err)
	}
	if _, err := s.CancelBatchJob(ctx, "nope", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CancelBatchJob(nope): %v, want ErrNotFound", err)
	}
}

// testBatchJobClaimConcurrent: concurrent claims of one job give it to
// one worker.
func testBatchJobClaimConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	if _, err := s.CreateBatchJob(ctx, testBatchJob("only", 1)); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	for i := range 8 {
		wg.Go(func() {
			owner := fmt.Sprintf("w%d", i)
			_, ok, err := s.ClaimBatchJob(ctx, owner, now, time.Minute)
			if err != nil {
				t.Errorf("ClaimBatchJob(%s): %v", owner, err)
			}
			if ok {
				mu.Lock()
				won = append(won, owner)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Errorf("concurrent claims won by %q, want one worker", won)
	}
}
