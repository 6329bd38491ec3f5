// Command probe holds workflows that the host tests use to probe
// scheduling, replay, the sandbox and failure handling.
package main

import (
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

// interleave: four tasks each run three steps whose bodies wait a
// seeded pseudo-random real time; after each step the task appends
// "task:step" to a slice the tasks share. The result is the order.
type interleaveIn struct {
	Seed  int64 `json:"seed"`
	MaxMS int   `json:"max_ms"`
}

func interleave(ctx *skein.Context, in interleaveIn) ([]string, error) {
	r := rand.New(rand.NewSource(in.Seed))
	if in.MaxMS <= 0 {
		in.MaxMS = 12
	}
	var order []string
	var futs []skein.Future[struct{}]
	for task := 0; task < 4; task++ {
		delays := []int{r.Intn(in.MaxMS), r.Intn(in.MaxMS), r.Intn(in.MaxMS)}
		futs = append(futs, skein.Go(ctx, func(ctx *skein.Context) (struct{}, error) {
			for step := 0; step < 3; step++ {
				d := time.Duration(delays[step]) * time.Millisecond
				v, err := skein.Step(ctx, "work", func(s *skein.StepContext) (string, error) {
					s.Sleep(d)
					return fmt.Sprintf("%d:%d", task, step), nil
				})
				if err != nil {
					return struct{}{}, err
				}
				order = append(order, v)
			}
			return struct{}{}, nil
		}))
	}
	for _, f := range futs {
		if _, err := f.Get(ctx); err != nil {
			return nil, err
		}
	}
	if _, err := skein.Sleep(ctx, time.Millisecond).Get(ctx); err != nil {
		return nil, err
	}
	return order, nil
}

// sandbox reports what workflow code sees of time, randomness and map
// order; it must be identical live and on replay for one run seed.
func sandbox(ctx *skein.Context, _ struct{}) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "now=%d\n", time.Now().UnixNano())
	fmt.Fprintf(&b, "rand=%d,%d,%d\n", rand.Int63(), rand.Int63(), rand.Intn(1000))
	var c [8]byte
	crand.Read(c[:])
	fmt.Fprintf(&b, "crypto=%x\n", c)
	m := map[string]int{}
	for i := 0; i < 20; i++ {
		m[fmt.Sprint("k", i)] = i
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	fmt.Fprintf(&b, "map=%s\n", strings.Join(keys, ","))
	if _, err := skein.Sleep(ctx, time.Millisecond).Get(ctx); err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "after=%d\n", skein.Now(ctx).UnixNano())
	fmt.Fprintf(&b, "env=%d args=%d\n", len(os.Environ()), len(os.Args))
	_, ferr := os.ReadFile("/etc/passwd")
	fmt.Fprintf(&b, "fs=%v\n", ferr != nil)
	return b.String(), nil
}

func panics(ctx *skein.Context, _ struct{}) (int, error) {
	if _, err := skein.Step(ctx, "ok", func(*skein.StepContext) (int, error) { return 1, nil }); err != nil {
		return 0, err
	}
	var m map[string]int
	//lint:ignore SA5000 the panic is what this workflow is for
	m["boom"] = 1 // assignment to entry in nil map
	return 0, nil
}

func fails(ctx *skein.Context, _ struct{}) (int, error) {
	return 0, errors.New("the workflow said no")
}

func exits(ctx *skein.Context, _ struct{}) (int, error) {
	os.Exit(7)
	return 0, nil
}

// rawgo misuses the parent's Context from a raw goroutine, which runs
// while the root waits for a task.
func rawgo(ctx *skein.Context, _ struct{}) (int, error) {
	go func() {
		_, _ = skein.Step(ctx, "inner", func(*skein.StepContext) (int, error) { return 1, nil }) // the misuse fails the run: no result to handle
	}()
	return skein.Go(ctx, func(ctx *skein.Context) (int, error) {
		return skein.Step(ctx, "outer", func(s *skein.StepContext) (int, error) {
			s.Sleep(time.Millisecond)
			return 2, nil
		})
	}).Get(ctx)
}

// deadlock awaits a future that can never settle.
func deadlock(ctx *skein.Context, _ struct{}) (int, error) {
	var self skein.Future[int]
	f := skein.Go(ctx, func(c *skein.Context) (int, error) {
		return self.Get(c)
	})
	self = f
	return f.Get(ctx)
}

// selectfirst: the later-created timer fires first live.
func selectfirst(ctx *skein.Context, _ struct{}) (int, error) {
	slow := skein.Sleep(ctx, 150*time.Millisecond)
	fast := skein.Sleep(ctx, 10*time.Millisecond)
	i, err := skein.Select(ctx, slow, fast)
	if err != nil {
		return -1, err
	}
	if _, err := slow.Get(ctx); err != nil {
		return -1, err
	}
	// Both settled now: Select must still answer by journal order.
	j, err := skein.Select(ctx, slow, fast)
	if err != nil || j != i {
		return -1, fmt.Errorf("second select %d, first %d: %v", j, i, err)
	}
	return i, nil
}

// badnames tries every rule a name can break; it returns, per attempt,
// the rule reported ("ok" when the op was issued).
func badnames(ctx *skein.Context, _ struct{}) (map[string]string, error) {
	out := map[string]string{}
	try := func(label, name string) {
		_, err := skein.Step(ctx, "body", func(*skein.StepContext) (string, error) { return label, nil }, skein.ID(name))
		var idErr *skein.StepIDError
		switch {
		case err == nil:
			out[label] = "ok"
		case errors.As(err, &idErr):
			out[label] = idErr.Rule
		default:
			out[label] = "error: " + err.Error()
		}
	}
	try("dot", "a.b")
	try("space", "a b")
	try("tab", "a\tb")
	try("numeric", "123")
	try("task", "t5")
	try("long", strings.Repeat("x", 301))
	try("max", strings.Repeat("y", 300))
	try("first", "dup")
	try("dup", "dup")
	try("fanout-step", "fanout")
	g := skein.Parallel(ctx, skein.ID("fanout"))
	var ferr *skein.StepIDError
	if err := g.Wait(ctx); errors.As(err, &ferr) {
		out["fanout-fork"] = ferr.Rule
	} else {
		out["fanout-fork"] = fmt.Sprint("ok ", err)
	}
	g2 := skein.Parallel(ctx, skein.ID("fan2"))
	for i := 0; i < 2; i++ {
		g2.Go(func(ctx *skein.Context) error {
			_, err := skein.Step(ctx, "body", func(*skein.StepContext) (string, error) { return "branch", nil }, skein.ID("same"))
			return err
		})
	}
	if err := g2.Wait(ctx); err != nil {
		out["branches"] = err.Error()
	} else {
		out["branches"] = "ok"
	}
	_, err := skein.Go(ctx, func(*skein.Context) (int, error) { return 1, nil }, skein.ID("x.y")).Get(ctx)
	if errors.As(err, &ferr) {
		out["go"] = ferr.Rule
	}
	_, err = skein.Sleep(ctx, time.Millisecond, skein.ID("9")).Get(ctx)
	if errors.As(err, &ferr) {
		out["sleep"] = ferr.Rule
	}
	return out, nil
}

// sorted keeps the test output stable: sort the registered names.
func main() {
	wfs := map[string]func(){
		"selectfirst": func() { skein.Register("selectfirst", selectfirst) },
		"badnames":    func() { skein.Register("badnames", badnames) },
		"emptyname":   func() { skein.Register("emptyname", emptyname) },
		"interleave":  func() { skein.Register("interleave", interleave) },
		"sandbox":     func() { skein.Register("sandbox", sandbox) },
		"panics":      func() { skein.Register("panics", panics) },
		"fails":       func() { skein.Register("fails", fails) },
		"exits":       func() { skein.Register("exits", exits) },
		"rawgo":       func() { skein.Register("rawgo", rawgo) },
		"deadlock":    func() { skein.Register("deadlock", deadlock) },
		"waves":       func() { skein.Register("waves", waves) },
		"feedmix":     func() { skein.Register("feedmix", feedmix) },
	}
	names := make([]string, 0, len(wfs))
	for n := range wfs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		wfs[n]()
	}
	skein.Main()
}
