package host

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// The guest SDK runs a task the host starts on the goroutine of a task
// that has finished (guest-sdk/skein, task.run), live and on replay: two
// waves of 30 sleeping tasks give the right sums, the first wave leaves
// its 30 goroutines waiting (some of them may be the spares a reactor's
// snapshot holds), the second starts none, and a replay, in every
// eviction mode, returns the same result.
func TestTaskGoroutinesReused(t *testing.T) {
	const tasks = 30
	for _, mode := range []Evict{EvictNever, EvictIdle, EvictAlways} {
		t.Run(string(mode), func(t *testing.T) {
			h, r := probeRun(t, mode, "waves", fmt.Sprintf(`{"tasks":%d}`, tasks))
			var out struct {
				Sums       [2]int `json:"sums"`
				Goroutines [3]int `json:"goroutines"`
			}
			if err := json.Unmarshal(r.Result, &out); err != nil {
				t.Fatalf("result %s: %v", r.Result, err)
			}
			want := tasks * (tasks - 1) / 2
			if out.Sums != [2]int{want, want} {
				t.Errorf("sums %v, want %d each", out.Sums, want)
			}
			g := out.Goroutines
			if g[1] < tasks || g[1] <= g[0] || g[2] != g[1] {
				t.Errorf("goroutines before, after wave 1, after wave 2: %v; want at least %d after wave 1 (kept waiting), none more after wave 2 (reused)", g, tasks)
			}
			rr, err := h.Replay(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if string(rr.Result) != string(r.Result) {
				t.Errorf("replay %s, live %s", rr.Result, r.Result)
			}
		})
	}
}
