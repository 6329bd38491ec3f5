package main

import (
	"fmt"
	"slices"
	"testing"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/testing/hosttest"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/skeintest"
)

func TestSequence(t *testing.T) {
	r, outs := hosttest.Run(t, "./examples/sequence", "sequence", `{"n":40}`, host.EvictNever)
	if string(r.Result) != "820" {
		t.Fatalf("result %s (%s)", r.Result, r.Error)
	}
	var want []string
	for i := 1; i <= 40; i++ {
		want = append(want, fmt.Sprint(i))
	}
	if got := hosttest.Keys(outs); !slices.Equal(got, want) {
		t.Fatalf("keys %q, want 1..40 in order", got)
	}
}

// The sequence replays exactly from every crash point (schedules cannot
// change a sequential workflow; a few are enough).
func TestSequenceCheck(t *testing.T) {
	skeintest.Check(t, wasmbuild.Build(t, "./examples/sequence"), "sequence", `{"n":12}`, skeintest.Options{Schedules: 20, ScheduleIndependent: true})
}
