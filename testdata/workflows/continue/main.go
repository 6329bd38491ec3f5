// Command continue holds workflows that continue as new
// (host/continue_test.go): a counting loop that continues every Per
// steps, a loop that never continues (it passes Config.MaxJournalOps), a
// parent whose child tries to continue, a run that continues with a
// promise pending, and, for retention (host/retention_test.go), a chain
// whose last run waits and a parent that waits after its child ended.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// state is what a loop carries from run to run.
type state struct {
	N     int `json:"n"`     // steps done so far, over the whole chain
	Per   int `json:"per"`   // steps per run, then continue as new
	Total int `json:"total"` // steps in all; then the chain completes
	Runs  int `json:"runs"`  // runs of the chain so far
}

// loop adds one step at a time, continuing as new every Per steps, and
// sleeps a virtual hour between steps when asked to (Per < 0 never).
func loop(ctx *skein.Context, st state) (state, error) {
	st.Runs++
	for i := 0; i < st.Per; i++ {
		if st.N >= st.Total {
			return st, nil
		}
		v, err := skein.Step(ctx, "add", func(*skein.StepContext) (int, error) { return 1, nil })
		if err != nil {
			return st, err
		}
		st.N += v
	}
	if st.N >= st.Total {
		return st, nil
	}
	return st, skein.ContinueAsNew(ctx, st)
}

// drift is loop with a bug in its third run only: that run reads state
// its step bodies set, so a replay of it (which does not run the bodies)
// issues a step the live run never issued. The checker must name that
// run of the chain, and its reproduction must replay it.
func drift(ctx *skein.Context, st state) (state, error) {
	st.Runs++
	ran := false
	for i := 0; i < st.Per && st.N < st.Total; i++ {
		v, err := skein.Step(ctx, "add", func(*skein.StepContext) (int, error) { ran = true; return 1, nil })
		if err != nil {
			return st, err
		}
		st.N += v
	}
	if st.Runs == 3 && !ran {
		if _, err := skein.Step(ctx, "only-on-replay", func(*skein.StepContext) (int, error) { return 0, nil }); err != nil {
			return st, err
		}
	}
	if st.N >= st.Total {
		return st, nil
	}
	return st, skein.ContinueAsNew(ctx, st)
}

// grow issues steps until the host stops it, never continuing.
func grow(ctx *skein.Context, _ struct{}) (int, error) {
	for i := 0; ; i++ {
		if _, err := skein.Step(ctx, "add", func(*skein.StepContext) (int, error) { return i, nil }); err != nil {
			return i, err
		}
	}
}

// parent starts loop as a child run, which tries to continue as new.
func parent(ctx *skein.Context, _ struct{}) (state, error) {
	return skein.Child[state](ctx, "loop", state{Per: 1, Total: 3}).Get(ctx)
}

// promised creates a promise, then continues as new (once) while it is
// pending; the successor completes at once.
func promised(ctx *skein.Context, again bool) (string, error) {
	if again {
		return "successor", nil
	}
	p := skein.Promise[string](ctx, skein.ID("approve"))
	_ = p
	if _, err := skein.Sleep(ctx, time.Millisecond).Get(ctx); err != nil {
		return "", err
	}
	return "", skein.ContinueAsNew(ctx, true)
}

// waitchain continues as new until its input reaches 2, then waits for
// the promise "go": a chain whose last run is live.
func waitchain(ctx *skein.Context, n int) (string, error) {
	if n < 2 {
		return "", skein.ContinueAsNew(ctx, n+1)
	}
	return skein.Promise[string](ctx, skein.ID("go")).Get(ctx)
}

// family starts a child run that completes at once, then waits for the
// promise "go": a live parent of an ended child.
func family(ctx *skein.Context, _ struct{}) (string, error) {
	if _, err := skein.Child[state](ctx, "loop", state{Per: 5, Total: 1}).Get(ctx); err != nil {
		return "", err
	}
	return skein.Promise[string](ctx, skein.ID("go")).Get(ctx)
}

func main() {
	skein.Register("loop", loop)
	skein.Register("grow", grow)
	skein.Register("drift", drift)
	skein.Register("parent", parent)
	skein.Register("promised", promised)
	skein.Register("waitchain", waitchain)
	skein.Register("family", family)
	skein.Main()
}
