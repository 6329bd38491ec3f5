package host

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/store"
)

// teardownEngine is an engine whose Run, once the host has ended the
// execution (exec.ErrEnded), fails with err instead: an engine that could
// not tear the instance down after the run's outcome was made.
type teardownEngine struct {
	engine.Engine
	err error
}

func (e teardownEngine) Run(ctx context.Context, m engine.Module, c engine.RunConfig) error {
	if err := e.Engine.Run(ctx, m, c); !errors.Is(err, exec.ErrEnded) {
		return err
	}
	return e.err
}

// An engine error after the host ended the execution keeps the run's
// outcome and is logged with the run and its module, by a drive and by a
// replay.
func TestEngineErrorAfterExecutionIsLogged(t *testing.T) {
	var log syncBuffer // lease_test.go
	h := newTestHost(t, Config{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	m := h.deploy(t, "./testdata/workflows/probe")
	h.eng = teardownEngine{Engine: h.eng, err: errors.New("instance teardown failed (injected)")}
	r := h.runToEnd(t, m, "fails", "{}", "teardown")
	if r.Status != store.RunFailed || r.Error != "the workflow said no" {
		t.Fatalf("run %s %q; want failed by its own result, %q", r.Status, r.Error, "the workflow said no")
	}
	res, err := h.Replay(context.Background(), r.ID)
	if err != nil || res.Status != store.RunFailed || res.Error != "the workflow said no" {
		t.Fatalf("replay: %+v, %v; want failed by its own result", res, err)
	}
	for _, what := range []string{"drive", "replay"} {
		want := []string{"execution=" + what, "run=teardown", "module=" + m.Hash, "instance teardown failed (injected)"}
		found := false
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, "execution="+what) {
				found = true
				for _, w := range want {
					if !strings.Contains(line, w) {
						t.Errorf("the %s's log line lacks %q: %s", what, w, line)
					}
				}
			}
		}
		if !found {
			t.Errorf("no log line for the %s's engine error in:\n%s", what, log.String())
		}
	}
}
