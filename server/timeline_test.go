package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// tm parses an RFC 3339 time of the API; the zero time for nil.
func tm(t *testing.T, s *string) time.Time {
	t.Helper()
	if s == nil {
		return time.Time{}
	}
	v, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		t.Fatalf("time %q: %v", *s, err)
	}
	return v
}

// checkTimelineJSON reads GET /v1/runs/{id}/ops of a completed run of
// testdata/workflows/remote's calls: every op has its start, settlement
// and duration; a flaky call's op has its two attempts, the first failed
// with its error, one after the other; an echo call's has none recorded
// (it succeeded at once).
func checkTimelineJSON(t *testing.T, url, id string, flaky bool) {
	t.Helper()
	resp, err := http.Get(url + "/v1/runs/" + id + "/ops")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v RunOps
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("ops of %s: %d %v", id, resp.StatusCode, err)
	}
	if v.ModuleName != "remote" || v.Drops == nil {
		t.Errorf("ops of %s: module_name %q, drops %v; want remote and a list", id, v.ModuleName, v.Drops)
	}
	for _, op := range v.Ops {
		if op.Started == nil || op.Settled == nil || op.DurationMS == nil || *op.DurationMS <= 0 || tm(t, op.Started).After(tm(t, op.Settled)) {
			t.Errorf("run %s op %s: started %v, settled %v, duration %v", id, op.Key, op.Started, op.Settled, op.DurationMS)
		}
		if !flaky {
			if len(op.Tries) != 0 {
				t.Errorf("run %s op %s succeeded at once, with attempts recorded: %+v", id, op.Key, op.Tries)
			}
			continue
		}
		if len(op.Tries) != 2 {
			t.Errorf("run %s op %s: attempts %+v; want 2", id, op.Key, op.Tries)
			continue
		}
		first, second := op.Tries[0], op.Tries[1]
		if first.N != 1 || first.Error == nil || !strings.Contains(*first.Error, "the first attempt fails") ||
			first.Started == nil || first.Ended == nil || tm(t, first.Ended).Before(tm(t, first.Started)) || first.DurationMS == nil {
			t.Errorf("run %s op %s: first attempt %+v", id, op.Key, first)
		}
		if second.N != 2 || second.Error != nil || second.Started == nil || second.Ended == nil ||
			tm(t, second.Started).Before(tm(t, first.Ended)) || tm(t, second.Ended).After(tm(t, op.Settled)) {
			t.Errorf("run %s op %s: second attempt %+v (the first ended %v, the op settled %v)", id, op.Key, second, *first.Ended, *op.Settled)
		}
	}
}
