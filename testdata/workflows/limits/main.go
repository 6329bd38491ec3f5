// Command limits holds workflows that go over the host's resource limits
// (host/limits_test.go): a memory bomb, an infinite loop, huge payloads,
// an op flood and a task flood, and one that works long but yields.
package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

var sink [][]byte

// membomb allocates and touches 1 MiB blocks until memory runs out.
func membomb(ctx *skein.Context, _ struct{}) (int, error) {
	for i := 0; ; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
		sink = append(sink, b)
	}
}

//lint:ignore U1000 written, never read: a global the compiler cannot drop the loop over
var spins uint64

// spin never returns and never calls into the host, after one step.
func spin(ctx *skein.Context, _ struct{}) (int, error) {
	if _, err := skein.Step(ctx, "before", func(*skein.StepContext) (int, error) { return 1, nil }); err != nil {
		return 0, err
	}
	for {
		spins++
	}
}

// busy computes for ms milliseconds of virtual-clock-free real time
// between steps, n times: it runs long in total but yields between.
type busyIn struct{ N, MS int }

func busy(ctx *skein.Context, in busyIn) (int, error) {
	total := 0
	for i := 0; i < in.N; i++ {
		v, err := skein.Step(ctx, "clock", func(s *skein.StepContext) (int64, error) { return s.Now().UnixNano(), nil })
		if err != nil {
			return 0, err
		}
		for {
			now, err := skein.Step(ctx, "clock", func(s *skein.StepContext) (int64, error) { return s.Now().UnixNano(), nil })
			if err != nil {
				return 0, err
			}
			if time.Duration(now-v) >= time.Duration(in.MS)*time.Millisecond {
				break
			}
			for k := 0; k < 100000; k++ { // compute between host calls
				spins++
			}
		}
		total++
	}
	return total, nil
}

// pollerr loops on ctx.Err(), a host call that returns at once, until
// the run is canceled: it never yields to the host's scheduler.
func pollerr(ctx *skein.Context, _ struct{}) (int, error) {
	if _, err := skein.Step(ctx, "before", func(*skein.StepContext) (int, error) { return 1, nil }); err != nil {
		return 0, err
	}
	n := 0
	for ctx.Err() == nil {
		n++
	}
	return n, nil
}

// pollout reads the outcomes forever.
func pollout(ctx *skein.Context, _ struct{}) (int, error) {
	if _, err := skein.Step(ctx, "before", func(*skein.StepContext) (int, error) { return 1, nil }); err != nil {
		return 0, err
	}
	for {
		if len(skein.Outcomes(ctx)) > 1<<30 {
			return 0, nil
		}
	}
}

// bodynow reads the real clock forever inside a step body.
func bodynow(ctx *skein.Context, _ struct{}) (int64, error) {
	return skein.Step(ctx, "forever", func(sc *skein.StepContext) (int64, error) {
		var last int64
		for {
			if t := sc.Now().UnixNano(); t < 0 {
				return last, nil
			} else {
				last = t
			}
		}
	})
}

// nap waits 1 s of real time inside a step body.
func nap(ctx *skein.Context, _ struct{}) (int, error) {
	return skein.Step(ctx, "nap", func(sc *skein.StepContext) (int, error) {
		sc.Sleep(time.Second)
		return 1, nil
	})
}

// treeIn shapes a tree of child runs: Fan children per run, Depth
// levels below this one; Name, if set, names each child op (with its
// index) so that ids grow long.
type treeIn struct {
	Depth, Fan int
	Name       string
	Nap        int  // leaves first sleep this many ms of real time in a step body
	Busy       int  // a run with children then works this many ms of real time in a step body, without yielding, before it joins them
	Abandon    bool // the children are skein.ParentClose(skein.AbandonChild): the run's end leaves them running
}

// tree starts its children and returns how many runs its subtree holds.
func tree(ctx *skein.Context, in treeIn) (int, error) {
	if in.Depth == 0 {
		if in.Nap > 0 {
			if _, err := skein.Step(ctx, "nap", func(sc *skein.StepContext) (int, error) {
				sc.Sleep(time.Duration(in.Nap) * time.Millisecond)
				return 0, nil
			}); err != nil {
				return 0, err
			}
		}
		return 1, nil
	}
	fs := make([]skein.Future[int], in.Fan)
	for i := range fs {
		var opts []skein.Option
		if in.Name != "" {
			opts = append(opts, skein.ID(fmt.Sprintf("%s-%d", in.Name, i)))
		}
		if in.Abandon {
			opts = append(opts, skein.ParentClose(skein.AbandonChild))
		}
		fs[i] = skein.Child[int](ctx, "tree", treeIn{Depth: in.Depth - 1, Fan: in.Fan, Name: in.Name, Nap: in.Nap}, opts...)
	}
	if in.Busy > 0 {
		if _, err := skein.Step(ctx, "busy", func(sc *skein.StepContext) (int, error) {
			for end := sc.Now().Add(time.Duration(in.Busy) * time.Millisecond); sc.Now().Before(end); {
			}
			return 0, nil
		}); err != nil {
			return 0, err
		}
	}
	n := 1
	for _, f := range fs {
		v, err := f.Get(ctx)
		if err != nil {
			return n, err
		}
		n += v
	}
	return n, nil
}

// bigstep returns a step value of n bytes (a JSON string of n-2 x's).
func bigstep(ctx *skein.Context, n int) (int, error) {
	s, err := skein.Step(ctx, "big", func(*skein.StepContext) (string, error) { return strings.Repeat("x", n-2), nil })
	return len(s), err
}

// bigresult returns a result of n bytes.
func bigresult(ctx *skein.Context, n int) (string, error) {
	return strings.Repeat("x", n-2), nil
}

// bigcall calls activity echo with an input of n bytes.
func bigcall(ctx *skein.Context, n int) (int, error) {
	s, err := skein.Call[string](ctx, "echo", strings.Repeat("x", n-2)).Get(ctx)
	return len(s), err
}

// opflood issues n steps.
func opflood(ctx *skein.Context, n int) (int, error) {
	for i := 0; i < n; i++ {
		if _, err := skein.Step(ctx, "op", func(*skein.StepContext) (int, error) { return i, nil }); err != nil {
			return i, err
		}
	}
	return n, nil
}

// taskflood spawns n tasks before awaiting any of them.
func taskflood(ctx *skein.Context, n int) (int, error) {
	fs := make([]skein.Future[int], n)
	for i := range fs {
		fs[i] = skein.Go(ctx, func(*skein.Context) (int, error) { return 1, nil })
	}
	sum := 0
	for _, f := range fs {
		v, err := f.Get(ctx)
		if err != nil {
			return sum, err
		}
		sum += v
	}
	return sum, nil
}

func main() {
	skein.Register("membomb", membomb)
	skein.Register("spin", spin)
	skein.Register("busy", busy)
	skein.Register("pollerr", pollerr)
	skein.Register("pollout", pollout)
	skein.Register("bodynow", bodynow)
	skein.Register("nap", nap)
	skein.Register("tree", tree)
	skein.Register("bigstep", bigstep)
	skein.Register("bigresult", bigresult)
	skein.Register("bigcall", bigcall)
	skein.Register("opflood", opflood)
	skein.Register("taskflood", taskflood)
	skein.Main()
}
