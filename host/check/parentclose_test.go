package check

import (
	"context"
	"testing"
)

// The checker applies the parent-close policies as a drive does (host's
// parentclose_test.go): the parent replays exactly from every crash point
// with either, with a child that sleeps and one that suspends on a
// promise (canceled in the simulation too, after its parent's end).
func TestParentCloseCheck(t *testing.T) {
	for _, in := range []string{`{"policy":"cancel","timer":"50ms","child":"1h"}`, `{"policy":"abandon","timer":"50ms","child":"1h"}`,
		`{"policy":"cancel","timer":"50ms","waiter":true}`, `{"policy":"abandon","timer":"50ms","waiter":true}`} {
		r, err := Module(context.Background(), wasmOf(t, "./testdata/workflows/parentclose"), Options{Workflow: "parent", Schedules: 30, CacheDir: cacheDir, LeavePromises: true,
			Input: []byte(in)})
		if err != nil || !r.OK() {
			t.Fatalf("%s: %v %s", in, err, details(r))
		}
		if len(r.Ends) != 1 || r.Ends[0].Result != `"the timer won"` {
			t.Fatalf("%s: ends %+v", in, r.Ends)
		}
	}
}
