package check

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/skeinrun/skein/activity"
)

// TestHTTPActivitySimulation: a check (the simulation) makes no request:
// the HTTP activity is faked like any activity, and fails without a fake.
func TestHTTPActivitySimulation(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	wasm := wasmOf(t, "./testdata/workflows/httpcall")
	input := json.RawMessage(`{"req":{"url":"` + srv.URL + `/"}}`)
	fake := func(_ context.Context, in []byte) ([]byte, error) {
		return []byte(`{"status":201,"body":"ZmFrZQ=="}`), nil
	}
	for _, tc := range []struct {
		fakes map[string]activity.Func
		want  string
	}{
		{map[string]activity.Func{activity.HTTPActivity: fake}, `{"status":201,"body":"fake"}`},
		{nil, `{"err":"activity \"skein.http\" makes no requests in a simulation; fake it in Simulation.Activities"}`},
	} {
		rep, err := Module(context.Background(), wasm, Options{Workflow: "fetch", Input: input, Schedules: 3, CacheDir: cacheDir, Activities: tc.fakes})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || len(rep.Ends) != 1 || rep.Ends[0].Result != tc.want {
			t.Errorf("check: ok %v, ends %+v; want one end with %s", rep.OK(), rep.Ends, tc.want)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the simulation made %d requests", n)
	}
}
