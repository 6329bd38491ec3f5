package store

import (
	"fmt"
	"time"
)

// Lease is a worker's claim on one run. Token identifies the claim: every
// claim of a run gets a token greater than any before it, so a token
// names exactly one holder for all time, unlike Owner (a worker may claim
// the same run again) or Expiry (clocks differ).
type Lease struct {
	RunID  string
	Owner  string
	Token  int64
	Expiry int64 // unix ns; another worker may claim the run from then on
}

// LostError is the error of a call made with l when l is no longer its
// run's current lease: it wraps ErrLeaseLost and names the lease.
func (l Lease) LostError() error {
	return fmt.Errorf("run %s lease %d of %q: %w", l.RunID, l.Token, l.Owner, ErrLeaseLost)
}

// LeaseHeldError is the error of ClaimRun for a run another worker
// holds: it names the live lease and wraps ErrLeaseHeld.
type LeaseHeldError struct{ Lease Lease }

func (e *LeaseHeldError) Error() string {
	l := e.Lease
	return fmt.Sprintf("run %s is being executed by worker %q (lease %d until %s)", l.RunID, l.Owner, l.Token,
		time.Unix(0, l.Expiry).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}

// Unwrap returns ErrLeaseHeld.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// ClaimedRun is a run returned by ClaimRuns with the lease taken on it.
type ClaimedRun struct {
	Run   Run
	Lease Lease
}

// LeaseRecord is one claim in a run's lease history.
type LeaseRecord struct {
	RunID string
	Owner string
	Token int64
	// ClaimedAt is the now given to ClaimRuns (unix ns), or the previous
	// lease's ReleasedAt if that is later: a claim is made only after the
	// release it follows has committed, but the two times come from
	// different clocks (the claimer's, read before its transaction, and
	// the releasing store's), and the history keeps them in order.
	ClaimedAt int64
	// Expiry is the latest expiry of the lease (the claim's, or that of
	// its last successful renewal).
	Expiry int64
	// ReleasedAt is when ReleaseLease gave the lease up (unix ns, the
	// store's clock); 0 if it was not released: it is still held, or it
	// ended at Expiry (possibly taken over by the next claim).
	ReleasedAt int64
}

// End returns when the lease stopped being held, as far as is known: the
// earlier of ReleasedAt (when set) and Expiry.
func (r LeaseRecord) End() int64 {
	if r.ReleasedAt != 0 && r.ReleasedAt < r.Expiry {
		return r.ReleasedAt
	}
	return r.Expiry
}
