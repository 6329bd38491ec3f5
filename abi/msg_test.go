package abi

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

func TestMessagesRoundTrip(t *testing.T) {
	inv := Invocation{Mode: ModeRun, Workflow: "race", Input: []byte(`{"n":1}`)}
	if got, err := DecodeInvocation(AppendInvocation(nil, inv)); err != nil || !reflect.DeepEqual(got, inv) {
		t.Fatalf("invocation %+v %v", got, err)
	}
	for _, r := range []OpResult{
		{State: StatePending, Promise: 7, Key: "t2.1"},
		{State: StateRunBody, Promise: 4, Key: "t1.1", Attempt: 3},
		{State: StateSettled, Promise: 1, Task: 3, Key: "1", Outcome: Outcome{Status: StatusOK, Data: []byte(`"v"`)}},
		{State: StateIDError, Key: "", Scope: "t2", Name: "a.b", Rule: "dot", Message: "bad"},
	} {
		if got, err := DecodeOpResult(AppendOpResult(nil, r)); err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("op result %+v -> %+v %v", r, got, err)
		}
		keyless := r
		keyless.Key = ""
		if got, err := DecodeOpResultKeyless(AppendOpResult(nil, r)); err != nil || !reflect.DeepEqual(got, keyless) {
			t.Fatalf("op result %+v -> keyless %+v %v", r, got, err)
		}
	}
	// A run-body result without the attempt (a host before it) decodes
	// with Attempt 0; one with it is read by a decoder before it, which
	// stops after the key, unchanged.
	legacy := []byte{StateRunBody, 4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, '1'}
	if got, err := DecodeOpResult(legacy); err != nil || got.Attempt != 0 || got.Key != "1" || got.Promise != 4 {
		t.Fatalf("run body without attempt: %+v %v", got, err)
	}
	if b := AppendOpResult(nil, OpResult{State: StateRunBody, Promise: 4, Key: "1", Attempt: 2}); !bytes.Equal(b[:len(legacy)], legacy) || len(b) != len(legacy)+4 {
		t.Fatalf("run body with attempt 2: % x, want % x then 02 00 00 00", b, legacy)
	}
	res := Resume{Kind: ResumeWake, Task: 2, Promise: 9, Outcome: Outcome{Status: StatusError, Data: []byte("no")}}
	if got, err := DecodeResume(AppendResume(nil, res)); err != nil || !reflect.DeepEqual(got, res) {
		t.Fatalf("resume %+v %v", got, err)
	}
	w := Wait{Ready: true, Index: 2, Outcome: Outcome{Status: StatusOK, Data: []byte("null")}}
	if got, err := DecodeWait(AppendWait(nil, w)); err != nil || !reflect.DeepEqual(got, w) {
		t.Fatalf("wait %+v %v", got, err)
	}
	es := []OutcomeEntry{{Key: "1", Function: "f", Outcome: Outcome{Status: StatusOK, Data: []byte("1")}}}
	if got, err := DecodeOutcomes(AppendOutcomes(nil, es)); err != nil || !reflect.DeepEqual(got, es) {
		t.Fatalf("outcomes %+v %v", got, err)
	}
	feed := AppendFeedHeader(nil, true, 2)
	feed = AppendFeedEntry(feed, OpStep, 4, "7", "noop", Outcome{Status: StatusOK, Data: []byte("7")})
	feed = AppendFeedEntry(feed, OpSleep, 5, "t2.8", "sleep", Outcome{Status: StatusError, Data: []byte("skein: canceled: x")})
	replaying, n, d := DecodeFeedHeader(feed)
	want := []FeedEntry{
		{Kind: OpStep, Promise: 4, Key: []byte("7"), Fn: []byte("noop"), Outcome: Outcome{Status: StatusOK, Data: []byte("7")}},
		{Kind: OpSleep, Promise: 5, Key: []byte("t2.8"), Fn: []byte("sleep"), Outcome: Outcome{Status: StatusError, Data: []byte("skein: canceled: x")}},
	}
	for i := range want {
		if got := d.FeedEntry(); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("feed entry %d: %+v, want %+v", i, got, want[i])
		}
	}
	if !replaying || n != 2 || d.Err != nil || len(d.B) != 0 {
		t.Fatalf("feed: replaying %v, count %d, err %v, %d bytes left", replaying, n, d.Err, len(d.B))
	}
	oo := OpOptions{MaxAttempts: 5, InitialBackoff: 1e6, MaxBackoff: 1e9, Multiplier: 2000, Jitter: 200, Timeout: 3e9, NonRetryable: []string{"card declined", ""},
		OnExhausted: OnExhaustedPause}
	if got, err := DecodeOpOptions(AppendOpOptions(nil, oo)); err != nil || !reflect.DeepEqual(got, oo) {
		t.Fatalf("op options %+v %v", got, err)
	}
	// A guest before OnExhausted sends the message without it, one before
	// ParentClose without either: 0.
	if b := AppendOpOptions(nil, oo); true {
		old := oo
		old.OnExhausted = 0
		for _, cut := range []int{4, 8} {
			if got, err := DecodeOpOptions(b[:len(b)-cut]); err != nil || !reflect.DeepEqual(got, old) {
				t.Fatalf("op options without the last %d bytes: %+v %v", cut, got, err)
			}
		}
	}
	child := OpOptions{ParentClose: ParentCloseAbandon}
	if got, err := DecodeOpOptions(AppendOpOptions(nil, child)); err != nil || !reflect.DeepEqual(got, child) {
		t.Fatalf("child op options %+v %v", got, err)
	}
}

// Every decoder rejects every truncation of a valid message, except the
// ones that end before optional last fields (OpOptions.ParentClose and
// OnExhausted, OpResult.Attempt): that is the message of a guest or host before it.
func TestTruncatedMessages(t *testing.T) {
	msgs := map[string][]byte{
		"invocation": AppendInvocation(nil, Invocation{Mode: ModeRun, Workflow: "w", Input: []byte("{}")}),
		"op":         AppendOpResult(nil, OpResult{State: StateSettled, Key: "k", Outcome: Outcome{Status: 1, Data: []byte("1")}}),
		"body":       AppendOpResult(nil, OpResult{State: StateRunBody, Key: "k", Attempt: 2}),
		"resume":     AppendResume(nil, Resume{Kind: ResumeWake, Task: 1, Promise: 1, Outcome: Outcome{Status: 1, Data: []byte("1")}}),
		"wait":       AppendWait(nil, Wait{Ready: true, Outcome: Outcome{Status: 1, Data: []byte("1")}}),
		"outcomes":   AppendOutcomes(nil, []OutcomeEntry{{Key: "1", Function: "f", Outcome: Outcome{Status: 1, Data: []byte("1")}}}),
		"options":    AppendOpOptions(nil, OpOptions{MaxAttempts: 3, NonRetryable: []string{"x"}}),
		"feed":       AppendFeedEntry(AppendFeedHeader(nil, true, 1), OpStep, 1, "1", "f", Outcome{Status: 1, Data: []byte("1")}),
	}
	dec := map[string]func([]byte) error{
		"invocation": func(b []byte) error { _, err := DecodeInvocation(b); return err },
		"op":         func(b []byte) error { _, err := DecodeOpResult(b); return err },
		"body":       func(b []byte) error { _, err := DecodeOpResult(b); return err },
		"resume":     func(b []byte) error { _, err := DecodeResume(b); return err },
		"wait":       func(b []byte) error { _, err := DecodeWait(b); return err },
		"outcomes":   func(b []byte) error { _, err := DecodeOutcomes(b); return err },
		"options":    func(b []byte) error { _, err := DecodeOpOptions(b); return err },
		"feed": func(b []byte) error {
			_, n, d := DecodeFeedHeader(b)
			for range n {
				d.FeedEntry()
			}
			return d.Err
		},
	}
	// The message may end before its optional last fields: these many
	// bytes from its end (options: on_exhausted, then parent_close too).
	optional := map[string][]int{"options": {4, 8}, "body": {4}}
	for name, m := range msgs {
		for n := 0; n < len(m); n++ {
			if slices.Contains(optional[name], len(m)-n) {
				continue
			}
			if err := dec[name](bytes.Clone(m[:n])); err == nil {
				t.Errorf("%s: %d of %d bytes decoded without error", name, n, len(m))
			}
		}
	}
}

func FuzzDecoders(f *testing.F) {
	f.Add(AppendOpResult(nil, OpResult{State: StateIDError, Scope: "s", Name: "n", Rule: "r", Message: "m"}))
	f.Add(AppendOutcomes(nil, []OutcomeEntry{{Key: "1"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		DecodeInvocation(b)
		DecodeOpResult(b)
		DecodeResume(b)
		DecodeWait(b)
		DecodeOutcomes(b)
		DecodeOpOptions(b)
	})
}
