// Command inflight holds workflows that end while an op they issued is
// still in flight, for the checker's rule on ops issued but never
// settled (docs/design.md, "The journal of an ended run"): lost, where a
// timer wins a select over a task whose step body is still running, and
// broken, whose step body sets workflow state, so that a replay (which
// does not run the body) issues an op the live run never issued.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// lost selects between a 10ms timer and a task whose step body takes
// 500ms, and returns the index of the winner: the timer, 0. The task's
// step is still running when the run ends.
func lost(ctx *skein.Context, _ struct{}) (int, error) {
	timer := skein.Sleep(ctx, 10*time.Millisecond)
	worker := skein.Go(ctx, func(ctx *skein.Context) (string, error) {
		return skein.Step(ctx, "compute", func(s *skein.StepContext) (string, error) {
			s.Sleep(500 * time.Millisecond)
			return "computed", nil
		})
	}, skein.ID("worker"))
	return skein.Select(ctx, timer, worker)
}

// broken runs a step whose body sets ran, which workflow code then reads:
// live, ran is true; on a replay the body does not run, and the workflow
// issues a step the live run never issued.
func broken(ctx *skein.Context, _ struct{}) (string, error) {
	ran := false
	if _, err := skein.Step(ctx, "a", func(*skein.StepContext) (int, error) { ran = true; return 1, nil }); err != nil {
		return "", err
	}
	if !ran {
		return skein.Step(ctx, "only-on-replay", func(*skein.StepContext) (string, error) { return "replayed", nil })
	}
	return "live", nil
}

func main() {
	skein.Register("lost", lost)
	skein.Register("broken", broken)
	skein.Main()
}
