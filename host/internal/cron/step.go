package cron

import (
	"time"

	"github.com/skeinrun/skein/store"
)

// MaxMissedPerStep bounds the slots one Step counts as missed: what is
// left is counted at the next step, at once.
const MaxMissedPerStep = 10_000

// Step decides the next step of sc at now: the schedule updated
// and the slot to start (0: none); or, when no step is due, the time of
// the next slot. busy says the run of the latest started slot has not
// ended.
func Step(sc store.Schedule, spec Schedule, loc *time.Location, now time.Time, busy bool) (u store.Schedule, fire int64, next time.Time) {
	u = sc
	if sc.Buffered != 0 && !busy {
		u.LastFired, u.Buffered, u.Fired = sc.Buffered, 0, sc.Fired+1
		return u, u.LastFired, time.Time{}
	}
	slot := spec.Next(time.Unix(0, sc.LastSlot).In(loc))
	if slot.IsZero() { // a spec that never fires (Feb 30)
		return sc, 0, now.Add(24 * time.Hour)
	}
	if slot.After(now) {
		return sc, 0, slot
	}
	if now.Sub(slot) > sc.Catchup {
		for n := 0; n < MaxMissedPerStep && !slot.IsZero() && now.Sub(slot) > sc.Catchup; n++ {
			u.Missed++
			u.LastSlot = slot.UnixNano()
			slot = spec.Next(slot)
		}
		return u, 0, time.Time{}
	}
	u.LastSlot = slot.UnixNano()
	switch {
	case !busy || sc.Overlap == store.OverlapAllow:
		u.LastFired, u.Fired = u.LastSlot, sc.Fired+1
		return u, u.LastFired, time.Time{}
	case sc.Overlap == store.OverlapBufferOne && sc.Buffered == 0:
		u.Buffered = u.LastSlot
	default:
		u.Overlapped++
	}
	return u, 0, time.Time{}
}

// NeedsStatus reports whether the next step of sc depends on whether the
// run of its latest started slot has ended: a slot is buffered, or one is
// due under an overlap policy other than allow.
func NeedsStatus(sc store.Schedule, spec Schedule, loc *time.Location, now time.Time) bool {
	if sc.LastFired == 0 {
		return false
	}
	if sc.Buffered != 0 {
		return true
	}
	slot := spec.Next(time.Unix(0, sc.LastSlot).In(loc))
	return sc.Overlap != store.OverlapAllow && !slot.IsZero() && !slot.After(now)
}
