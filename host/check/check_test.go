package check

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

func TestCheckRace(t *testing.T) {
	r := check(t, "./examples/race", Options{Workflow: "race", Schedules: 50})
	if !r.OK() || len(r.Ends) != 1 {
		t.Fatalf("%s", details(r))
	}
	if r.Schedules != 50 || r.Replays < 50*6 {
		t.Errorf("%d schedules, %d replays; want 50 and a replay from every tick (at least 6 each)", r.Schedules, r.Replays)
	}
	if e := r.Ends[0]; string(e.Result) != `["s2:slow-result","f2:fast-result"]` {
		t.Errorf("end %+v", e)
	}
}

// The shared-counter policy (docs/design.md, "Ids") makes the ids of the
// race's second steps depend on which chain's first step finishes first:
// the check must say so.
func TestCheckCatchesCounterMinting(t *testing.T) {
	r := check(t, "./examples/race", Options{Workflow: "race", minting: sched.MintCounter})
	if r.OK() || len(r.IDConflicts) == 0 {
		t.Fatalf("counter minting passed the check:\n%s", details(r))
	}
	if !strings.Contains(r.Summary(), "ids DEPEND ON THE SCHEDULE") {
		t.Errorf("summary %q", r.Summary())
	}
}

// With the shared counter and an instant recovery of recorded values, a
// replay hands each chain the other chain's value: the check reports the
// divergence with the key, both values and a reproduction.
func TestCheckCatchesSwappedValues(t *testing.T) {
	r := check(t, "./examples/race", Options{Workflow: "race", Schedules: 20, minting: sched.MintCounter, replayInline: true})
	if len(r.Divergences) == 0 {
		t.Fatalf("no divergence found:\n%s", details(r))
	}
	out := details(r)
	for _, want := range []string{"divergence: schedule", "expected:", "got:", "reproduce: --seed 1 --schedule"} {
		if !strings.Contains(out, want) {
			t.Errorf("details lack %q:\n%s", want, out)
		}
	}
	d := r.Divergences[0]
	one := check(t, "./examples/race", Options{Workflow: "race", Schedule: d.Schedule, CrashAt: d.CrashAt, minting: sched.MintCounter, replayInline: true})
	if len(one.Divergences) != 1 || one.Divergences[0] != d {
		t.Errorf("the reproduction found %+v, want %+v", one.Divergences, d)
	}
}

func TestCheckScheduleDependentResult(t *testing.T) {
	r := check(t, "./testdata/workflows/timing", Options{Workflow: "first", Schedules: 40})
	if !r.OK() {
		t.Fatalf("%s", details(r))
	}
	if len(r.Ends) != 2 || !strings.Contains(r.Summary(), "result depends on the schedule") {
		t.Fatalf("want two ends (a and b):\n%s", details(r))
	}
	r = check(t, "./testdata/workflows/timing", Options{Workflow: "shared", Schedules: 40})
	if !r.OK() || len(r.Ends) != 2 {
		t.Fatalf("want replay-exact, ids independent, two orders:\n%s", details(r))
	}
}

// A sequential workflow records the same journal under every schedule:
// the check replays the crash points of one and shares them with the
// others, and still checks every crash point of every schedule.
func TestCheckSharesReplays(t *testing.T) {
	const n, schedules = 50, 40
	r := check(t, "./testdata/workflows/bench", Options{Workflow: "steps", Input: []byte(`{"n":50}`), Schedules: schedules})
	if !r.OK() || len(r.Ends) != 1 {
		t.Fatalf("%s", details(r))
	}
	if want := schedules * (n + 1); r.Replays != want || r.Shared != want-(n+1) {
		t.Errorf("%d replays, %d shared; want %d checked, all but one schedule's %d shared", r.Replays, r.Shared, want, n+1)
	}
	if !strings.Contains(r.Summary(), fmt.Sprintf("(%d shared by schedules that recorded the same journal)", r.Shared)) {
		t.Errorf("summary %q does not say what was shared", r.Summary())
	}
}

// The same seed checks the same schedules: one schedule reproduced alone
// ends the same as in the full check.
func TestCheckReproducible(t *testing.T) {
	full := check(t, "./testdata/workflows/timing", Options{Workflow: "first", Schedules: 20, Seed: 7})
	for _, e := range full.Ends {
		k := e.Schedules[len(e.Schedules)-1]
		one := check(t, "./testdata/workflows/timing", Options{Workflow: "first", Seed: 7, Schedule: k, CrashAt: 1})
		if len(one.Ends) != 1 || one.Ends[0].Result != e.Result || one.Replays != 1 {
			t.Fatalf("schedule %d alone: %+v, want %s and one replay", k, one.Ends, e.Result)
		}
	}
}

// -args -nointerrupt turns the guest's interrupt checks off in the
// benchmarks of the checker (as the host's workload benchmarks' flag).
var benchNoInterrupt = flag.Bool("nointerrupt", false, "benchmarks: run the guests without interrupt checks")

// BenchmarkCheckRace checks the race example under 200 schedules with a
// replay from every crash point (the target: under 2 s).
func BenchmarkCheckRace(b *testing.B) {
	benchCheck(b, "./examples/race", Options{Workflow: "race", DisableInterrupt: *benchNoInterrupt})
}

// BenchmarkCheckNested is issue 20's second checker figure: a three-level
// nested spawn of the bench module (15 tasks), whose 200 schedules record
// 200 different journals, so no crash point is shared.
func BenchmarkCheckNested(b *testing.B) {
	benchCheck(b, "./testdata/workflows/bench", Options{Workflow: "nested", Input: []byte(`{"depth":3,"width":2}`)})
}

// benchCheck times Module of the module built from pkg with o, after a
// check of one schedule has compiled it into the cache.
func benchCheck(b *testing.B, pkg string, o Options) {
	wasm, err := os.ReadFile(wasmbuild.Build(b, pkg))
	if err != nil {
		b.Fatal(err)
	}
	o.CacheDir = cacheDir
	if _, err := Module(context.Background(), wasm, Options{Workflow: o.Workflow, Schedules: 1, CacheDir: cacheDir}); err != nil {
		b.Fatal(err) // compile into the cache
	}
	b.ResetTimer()
	var r *Report
	for range b.N {
		if r, err = Module(context.Background(), wasm, o); err != nil || !r.OK() {
			b.Fatal(err, r.Summary())
		}
	}
	b.ReportMetric(float64(r.Replays), "replays")
	b.ReportMetric(100*float64(r.Replays)/float64(max(r.CrashPoints, 1)), "%crash-points")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/check")
}

// BenchmarkCheckFanout200 is issue 33's checker figure: 200 tasks of two
// steps each, joined (testdata/workflows/fanout200), under `skein
// check`'s defaults (200 schedules, a budget of 30 s). It reports the
// share of crash points replayed and the process's peak resident memory
// (VmHWM), which must not grow with the schedules.
func BenchmarkCheckFanout200(b *testing.B) {
	benchCheck(b, "./testdata/workflows/fanout200", Options{Workflow: "fanout", Budget: 30 * time.Second})
	if peak, err := peakRSS(); err == nil {
		b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	}
}

// peakRSS is this process's peak resident set size in bytes (VmHWM).
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			_, err := fmt.Sscan(v, &kb)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}
