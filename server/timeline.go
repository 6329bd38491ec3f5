package server

import (
	"net/http"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// The timeline's data in GET /v1/runs/{id}/ops (docs/api.md, docs/ui.md):
// each op's start and settlement, its recorded attempts, and the idle
// points where the run's instance was dropped and replayed. The times are
// the host's wall clock, kept for people to look at; replays never read
// them.

// The timeline's documents (defined in package client).
type (
	// Try is client.Try: one recorded attempt of an op.
	Try = client.Try
	// Drop is client.Drop: an idle point where the run's instance was
	// dropped and replayed.
	Drop = client.Drop
)

// attemptsOf reads the run's attempts for the ops view: the tries by op
// key, and the drops. ok is false when the error was answered.
func (a *api) attemptsOf(w http.ResponseWriter, r *http.Request) (map[string][]Try, []Drop, bool) {
	as, err := a.c(r).Attempts(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return nil, nil, false
	}
	tries := map[string][]Try{}
	drops := []Drop{}
	for _, at := range as {
		if at.Key == store.IdleKey {
			drops = append(drops, Drop{Seq: at.N, Dropped: nsText(at.Start), Replayed: nsText(at.End)})
			continue
		}
		t := Try{N: at.N, Started: nsText(at.Start), Ended: nsText(at.End), DurationMS: durationMS(at.Start, at.End)}
		if at.Error != "" {
			e := at.Error
			t.Error = &e
		}
		tries[at.Key] = append(tries[at.Key], t)
	}
	return tries, drops, true
}

// opTimes sets the timeline fields of op from o.
func opTimes(op *Op, o host.Outcome, tries []Try) {
	op.Started, op.Settled = timeText(o.StartedAt), timeText(o.SettledAt)
	if !o.StartedAt.IsZero() && !o.SettledAt.IsZero() {
		op.DurationMS = durationMS(o.StartedAt.UnixNano(), o.SettledAt.UnixNano())
	}
	op.Tries = tries
}

// nsText is unix ns t in RFC 3339, nil for 0.
func nsText(t int64) *string {
	if t == 0 {
		return nil
	}
	return timeText(time.Unix(0, t))
}

// durationMS is end-start in milliseconds, nil unless both are known.
func durationMS(start, end int64) *float64 {
	if start == 0 || end == 0 {
		return nil
	}
	d := float64(end-start) / 1e6
	return &d
}
