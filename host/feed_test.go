package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// A history that mixes ops a feed hands over with ones it cannot (named
// steps, a retry policy, a task's steps, timers settled at idle points,
// a select on fed timers) replays to its own result, and makes the same
// ops in every eviction mode, and the replays take ops from feeds.
func TestFeedReplaysMixedOps(t *testing.T) {
	const n = 60
	type op struct{ Key, Kind, Function, Value, Error string }
	var first []op // which timer settles first is real time's choice, so the result's picked may differ
	for _, mode := range []Evict{EvictNever, EvictIdle, EvictAlways} {
		t.Run(string(mode), func(t *testing.T) {
			h, r := probeRun(t, mode, "feedmix", fmt.Sprintf(`{"n":%d}`, n))
			fedLive := h.metrics.NS("").FedOps.Load()
			if mode == EvictAlways && fedLive == 0 {
				t.Errorf("the replays after each idle point took no op from a feed")
			}
			var out struct {
				Sum     int      `json:"sum"`
				TaskSum int      `json:"task_sum"`
				Keys    []string `json:"keys"`
			}
			if err := json.Unmarshal(r.Result, &out); err != nil {
				t.Fatalf("result %s: %v", r.Result, err)
			}
			if out.Sum != n*(n+1)/2 || out.TaskSum != 15 || !reflect.DeepEqual(out.Keys, feedmixSleepKeys(n)) {
				t.Errorf("result %s; want sum %d, task_sum 15, keys %v", r.Result, n*(n+1)/2, feedmixSleepKeys(n))
			}
			rr, err := h.Replay(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if string(rr.Result) != string(r.Result) {
				t.Errorf("replay %s, live %s", rr.Result, r.Result)
			}
			if fed := h.metrics.NS("").FedOps.Load() - fedLive; fed < n/2 {
				t.Errorf("the verifying replay took %d ops from feeds; want at least %d", fed, n/2)
			}
			var ops []op
			for _, o := range h.outcomes(t, r.ID) {
				ops = append(ops, op{o.Key, o.Kind, o.Function, string(o.Value), o.Error})
			}
			sort.Slice(ops, func(i, j int) bool { return ops[i].Key < ops[j].Key })
			if first == nil {
				first = ops
				return
			}
			if !reflect.DeepEqual(ops, first) {
				t.Errorf("journal differs from evict %s:\n%v\n%v", EvictNever, ops, first)
			}
		})
	}
}

// feedmixSleepKeys are the keys of feedmix's sleeps: every op of the root
// takes a position, named or not, and so does the task at n/2.
func feedmixSleepKeys(n int) []string {
	var keys []string
	pos := 0
	for i := 1; i <= n; i++ {
		pos++ // the step
		if i%7 == 0 {
			pos++
			keys = append(keys, strconv.Itoa(pos))
		}
		if i == n/2 {
			pos++ // the task
		}
	}
	return keys
}

// A code change deep in a replayed history is caught at its op, with the
// host's own error, although the ops before it were taken from a feed:
// v2 renames step 30 of 40, and the resume diverges at key 30 after
// exactly 29 fed ops.
func TestFeedCodeChangeDeep(t *testing.T) {
	h, r, v2 := suspendedV1(t, "long")
	before := h.metrics.NS("").FedOps.Load()
	got, err := h.Resume(context.Background(), r.ID, v2.Hash, DriveOptions{WaitTimers: true})
	var cm *CodeMismatchError
	if !errors.As(err, &cm) {
		t.Fatalf("resume: %v, want a CodeMismatchError", err)
	}
	if cm.Key != "30" || cm.Recorded != "s" || cm.Got != "s-renamed" || got.Status != store.RunDiverged {
		t.Fatalf("mismatch %+v, status %s", cm, got.Status)
	}
	if fed := h.metrics.NS("").FedOps.Load() - before; fed != 29 {
		t.Errorf("%d ops taken from a feed before the change; want 29", fed)
	}
}

// hostCallOf is one host function call of a test that plays the guest.
type hostCallOf struct {
	name string
	args []uint64
}

// feedExec starts an execution of a new run of the hostile module's ok
// workflow that replays journal, in fake memory holding "ok" at 0, and
// plays the guest's intro: hello, workflows, invocation, next.
func feedExec(t *testing.T, journal []sched.Record) (*exec.Exec, *fakeMemory) {
	h := newTestHost(t, Config{Evict: EvictNever, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	m := h.deploy(t, "./testdata/workflows/hostile")
	run, err := h.Start(context.Background(), StartOptions{Module: m.Hash, Workflow: "ok", ID: "feed", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rs := newRunState(run, DriveOptions{})
	t.Cleanup(rs.Close)
	x := exec.NewExec(h.Host.execHost(), rs.RunState, journal)
	x.SetBase(context.Background())
	mem := &fakeMemory{b: make([]byte, 64<<10)}
	copy(mem.b, "oks")
	if _, err := callHost(x, mem, hostCallOf{abi.FnHello, []uint64{1}}, hostCallOf{abi.FnWorkflows, []uint64{0, 2}},
		hostCallOf{abi.FnInvocation, []uint64{1024, 4096}}, hostCallOf{abi.FnNext, []uint64{1024, 4096}}); err != nil {
		t.Fatalf("intro: %v (%v)", err, x.Failure)
	}
	return x, mem
}

// callHost makes the calls in order, as the guest would, until one ends
// the execution; it returns the last call's result.
func callHost(x *exec.Exec, mem *fakeMemory, calls ...hostCallOf) (uint64, error) {
	var res uint64
	for _, c := range calls {
		sig, _ := exec.HostFnType(c.name)
		stack := make([]uint64, max(len(sig.Params), len(sig.Results)))
		copy(stack, c.args)
		if err := x.CallHost(context.Background(), mem, c.name, stack); err != nil {
			return 0, err
		}
		res = stack[0]
	}
	return res, nil
}

// stepRecord is the record of a settled step.
func stepRecord(key string, seq int64, value string) sched.Record {
	return sched.Record{Key: key, Kind: "step", Function: "s", Outcome: sched.Outcome{OK: true, Value: []byte(value)}, Seq: seq}
}

// A guest that breaks the feed's protocol fails its run with a message
// that names the rule: it reports more used entries than it was fed, or
// makes another host call while it holds a feed it has not reported.
func TestFeedProtocolMisuse(t *testing.T) {
	journal := []sched.Record{stepRecord("1", 1, "1"), stepRecord("2", 2, "2")}
	feed := func(used, capacity uint64) hostCallOf {
		return hostCallOf{abi.FnFeed, []uint64{1, used, 8192, capacity}}
	}
	for _, tc := range []struct {
		name  string
		calls []hostCallOf
		want  string
	}{
		{"used more than fed", []hostCallOf{feed(0, 4096), feed(3, 0)},
			"feed: task 1 reports 3 fed ops used, but its last feed gave it 2"},
		{"used without a feed", []hostCallOf{feed(1, 0)},
			"feed: task 1 reports 1 fed ops used, but its last feed gave it 0"},
		{"op while holding a feed", []hostCallOf{feed(0, 4096), {abi.FnOp, []uint64{1, uint64(abi.OpStep), 0, 0, 2, 1, 0, 0, 1024, 4096}}},
			"the module called op while task 1 held a feed of 2 recorded outcomes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, mem := feedExec(t, journal)
			if _, err := callHost(x, mem, tc.calls...); !errors.Is(err, exec.ErrEnded) {
				t.Fatalf("calls returned %v; want the execution ended", err)
			}
			if x.State != exec.Failed || x.Failure == nil || !strings.Contains(x.Failure.Error(), tc.want) {
				t.Fatalf("state %v, failure %v; want a failed run with %q", x.State, x.Failure, tc.want)
			}
		})
	}
}

// The feed message the host writes holds the recorded outcomes of the
// task's next unnamed ops, with the handles op would give them (the
// root task's join promise is 1), and
// never more bytes than the buffer: an entry that does not fit is left
// for op. Used entries are applied as op would: the run's next op gets
// the next key.
func TestFeedMessage(t *testing.T) {
	journal := []sched.Record{
		stepRecord("1", 1, "1"),
		{Key: "2", Kind: "sleep", Function: "sleep", Outcome: sched.Outcome{OK: true, Value: []byte("null")}, Seq: 2},
		{Key: "3", Kind: "step", Function: "s", Outcome: sched.Outcome{Err: strings.Repeat("x", 100)}, Seq: 3},
		stepRecord("4", 4, "4"),
	}
	x, mem := feedExec(t, journal)
	if n, err := callHost(x, mem, hostCallOf{abi.FnFeed, []uint64{1, 0, 8192, abi.FeedHeader - 1}}); err != nil || n != 0 || x.FeedHeld() != 0 {
		t.Fatalf("a buffer smaller than the header: %d bytes, %v, %d entries held; want 0, nothing", n, err, x.FeedHeld())
	}
	for _, tc := range []struct {
		capacity uint64
		want     int
	}{{4096, 4}, {100, 2}, {abi.FeedHeader, 0}} {
		x, mem := feedExec(t, journal)
		n, err := callHost(x, mem, hostCallOf{abi.FnFeed, []uint64{1, 0, 8192, tc.capacity}})
		if err != nil || n > tc.capacity {
			t.Fatalf("cap %d: %v (%v), a message of %d bytes", tc.capacity, err, x.Failure, n)
		}
		replaying, count, d := abi.DecodeFeedHeader(mem.b[8192 : 8192+n])
		if !replaying || int(count) != tc.want {
			t.Fatalf("cap %d: replaying %v, %d entries; want %d", tc.capacity, replaying, count, tc.want)
		}
		for i := range tc.want {
			e := d.FeedEntry()
			rec := journal[i]
			kind, _ := abi.ParseOpKind(rec.Kind)
			if e.Kind != kind || string(e.Key) != rec.Key || string(e.Fn) != rec.Function || e.Promise != uint32(i+2) || !reflect.DeepEqual(e.Outcome, exec.ToABI(rec.Outcome)) {
				t.Errorf("cap %d: entry %d = %+v, want %+v with promise %d", tc.capacity, i, e, rec, i+2)
			}
		}
		if d.Err != nil || len(d.B) != 0 {
			t.Errorf("cap %d: %v, %d bytes after the entries", tc.capacity, d.Err, len(d.B))
		}
		if tc.want < 2 {
			continue
		}
		// Use two, then issue the next op with op: it is the third record.
		n, err = callHost(x, mem, hostCallOf{abi.FnFeed, []uint64{1, 2, 0, 0}},
			hostCallOf{abi.FnOp, []uint64{1, uint64(abi.OpStep), 0, 0, 2, 1, 0, 0, 1024, 4096}})
		if err != nil {
			t.Fatalf("cap %d: %v (%v)", tc.capacity, err, x.Failure)
		}
		r, err := abi.DecodeOpResult(mem.b[1024 : 1024+n])
		if err != nil || r.State != abi.StateSettled || r.Key != "3" || r.Promise != 4 || string(r.Outcome.Data) != journal[2].Outcome.Err {
			t.Errorf("cap %d: op after two fed ops: %+v %v; want the settled record at key 3, promise 4", tc.capacity, r, err)
		}
	}
}
