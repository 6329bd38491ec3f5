package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
	"github.com/skeinrun/skein/store"
)

func sumSquares(n int) int { return n * (n + 1) * (2*n + 1) / 6 }

func TestFanoutChildren(t *testing.T) {
	e := hosttest.New(t, "./examples/fanout", host.EvictIdle)
	r := e.Drive(e.Start("fanout", `{"n":100}`).ID)
	if r.Status != store.RunCompleted || string(r.Result) != fmt.Sprint(sumSquares(100)) {
		t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
	}
	outs := e.Verify(r)
	if len(outs) != 100 {
		t.Fatalf("%d outcomes, want 100 child outcomes", len(outs))
	}
	for i := range 100 {
		key := fmt.Sprintf("fan.%d.1", i)
		o := hosttest.Outcome(t, outs, key)
		if o.Kind != "child" || o.Function != "square" || string(o.Value) != fmt.Sprint((i+1)*(i+1)) {
			t.Fatalf("%s: %+v", key, o)
		}
		c, err := e.Store.Run(context.Background(), r.ID+"."+key)
		if err != nil {
			t.Fatal(err)
		}
		if c.Parent != r.ID || c.Status != store.RunCompleted || string(c.Result) != string(o.Value) {
			t.Fatalf("child run %s: %+v", c.ID, c)
		}
	}
}

func TestFanoutSteps(t *testing.T) {
	for _, evict := range []host.Evict{host.EvictNever, host.EvictAlways} {
		r, outs := hosttest.Run(t, "./examples/fanout", "fanout", `{"n":100,"steps":true}`, evict)
		if r.Status != store.RunCompleted || string(r.Result) != fmt.Sprint(sumSquares(100)) {
			t.Fatalf("%s: run %s %s %s", evict, r.Status, r.Result, r.Error)
		}
		if o := hosttest.Outcome(t, outs, "fan.99.1"); string(o.Value) != "10000" {
			t.Fatalf("%s: fan.99.1 = %s", evict, o.Value)
		}
	}
}

// Under EvictAlways the parent is dropped and replayed at every wait, and
// every child too; ids and results hold.
func TestFanoutChildrenReplayed(t *testing.T) {
	r, _ := hosttest.Run(t, "./examples/fanout", "fanout", `{"n":8}`, host.EvictAlways)
	if r.Status != store.RunCompleted || string(r.Result) != fmt.Sprint(sumSquares(8)) {
		t.Fatalf("run %s %s %s", r.Status, r.Result, r.Error)
	}
}

// The fork's branches end in every order under the schedules; ids and the
// sum do not depend on it, with children and with steps.
func TestFanoutCheck(t *testing.T) {
	wasm := wasmbuild.Build(t, "./examples/fanout")
	for _, in := range []string{`{"n":4}`, `{"n":6,"steps":true}`} {
		r := skeintest.Check(t, wasm, "fanout", in, skeintest.Options{Schedules: 40, ScheduleIndependent: true})
		if want := fmt.Sprint(sumSquares(4)); in == `{"n":4}` && r.Ends[0].Result != want {
			t.Fatalf("%s: end %+v, want %s", in, r.Ends[0], want)
		}
	}
}
