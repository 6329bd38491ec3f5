package check

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/store"
)

// A checked run that continues as new (skein.ContinueAsNew) is followed:
// its successor is driven in the same simulation, its virtual clock going
// on from where the run ended, and is checked like the first run (crash
// replays, ids); and so on along the chain, up to
// Options.MaxContinues successors. The schedule's end is the end of
// the last run followed.

// DefaultContinues is Options.MaxContinues's default.
const DefaultContinues = 100

// ChainRun is one run of the chain a checked schedule ran: the first run,
// then each successor it continued as.
type ChainRun struct {
	ID      string          `json:"id"` // the run's id in the check ("s1", "s1~2", …)
	Status  store.RunStatus `json:"status"`
	Input   string          `json:"input"`  // JSON
	Result  string          `json:"result"` // JSON; for a continued run, its successor's input
	Error   string          `json:"error,omitempty"`
	Journal int             `json:"journal"` // settled outcomes in its journal
	// Start is the virtual time the run started at: for a successor,
	// where its predecessor's clock stood when it continued.
	Start time.Time `json:"start"`
}

func chainRun(r store.Run, input []byte, journal int) ChainRun {
	return ChainRun{ID: r.ID, Status: r.Status, Input: string(input), Result: string(r.Result), Error: r.Error,
		Journal: journal, Start: time.Unix(0, r.StartTime).UTC()}
}

// checkChain follows the successors of prev, a run that continued as new,
// and checks each; res.end becomes the end of the last one.
func (c *checker) checkChain(ctx context.Context, res *scheduleResult, prev store.Run, seed uint64) {
	for n := 1; prev.Status == store.RunContinued && n <= c.o.MaxContinues; n++ {
		id := host.ContinuedRunID(prev.ID)
		next, err := c.checkSuccessor(ctx, res, id, exec.Mix(seed, id))
		if err != nil {
			res.err = fmt.Errorf("successor %s of %s: %w", id, prev.ID, err)
			return
		}
		prev = next
	}
	res.end = EndGroup{Status: prev.Status, Result: string(prev.Result), Error: prev.Error}
}

// checkSuccessor drives the successor id (created by its predecessor's
// end) in a simulation of its own from its start time, records its ops
// and promises under its position in the chain, and replays it from its
// crash points.
func (c *checker) checkSuccessor(ctx context.Context, res *scheduleResult, id string, seed uint64) (store.Run, error) {
	run, err := c.mem.Run(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	sim := exec.NewSimRun(seed, run.StartTime)
	sim.Index = res.k
	c.link.Sim.Preset(id, sim)
	defer c.link.Sim.Drop(id)
	start := time.Now()
	final, err := c.h.Drive(ctx, id, host.DriveOptions{})
	if err != nil && !host.IsDivergence(err) {
		return final, err
	}
	cost := time.Since(start)
	pos := id[strings.LastIndexByte(id, '~'):]
	for key, op := range sim.Ops {
		res.ops[pos+":"+key] = op
	}
	for key, how := range sim.Promised {
		if res.promised == nil {
			res.promised = map[string]string{}
		}
		res.promised[pos+":"+key] = how
	}
	journal, err := c.journal(ctx, id)
	if err != nil {
		return final, err
	}
	res.chain = append(res.chain, chainRun(final, run.Input, len(journal)))
	return final, c.replayCrashes(ctx, res, final, sim, journal, cost)
}
