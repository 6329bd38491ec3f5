package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The worker's own rules; its protocol runs against a real server in
// server/tasks_test.go and through processes in cmd/skein.

func TestNewChecksServer(t *testing.T) {
	for _, s := range []string{"", "127.0.0.1:7070", "ftp://x"} {
		if _, err := New(Options{Server: s}); err == nil || !strings.Contains(err.Error(), "is not an http:// or https:// URL") {
			t.Errorf("New(%q): %v; want the URL rule", s, err)
		}
	}
	w, err := New(Options{Server: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Identity() == "" || w.o.Concurrency != 16 || w.o.Pollers != 2 {
		t.Errorf("defaults: identity %q, concurrency %d, pollers %d", w.Identity(), w.o.Concurrency, w.o.Pollers)
	}
	if err := w.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no activity is registered") {
		t.Errorf("Run without activities: %v", err)
	}
}

func TestRegisterRules(t *testing.T) {
	w, _ := New(Options{Server: "http://127.0.0.1:1"})
	w.Register("a", func(context.Context, []byte) ([]byte, error) { return nil, nil })
	for name, reg := range map[string]func(){
		"empty name": func() {
			w.Register("", func(context.Context, []byte) ([]byte, error) { return nil, nil })
		},
		"nil func": func() { w.Register("b", nil) },
		"twice": func() {
			w.Register("a", func(context.Context, []byte) ([]byte, error) { return nil, nil })
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register with %s did not panic", name)
				}
			}()
			reg()
		}()
	}
}

func TestTyped(t *testing.T) {
	type in struct{ N int }
	f := Typed(func(_ context.Context, i in) (int, error) {
		if i.N < 0 {
			return 0, errors.New("negative")
		}
		return 2 * i.N, nil
	})
	out, err := f(context.Background(), json.RawMessage(`{"N":21}`))
	if err != nil || string(out) != "42" {
		t.Errorf("Typed: %s %v; want 42", out, err)
	}
	_, err = f(context.Background(), json.RawMessage(`"nope"`))
	var nr *NonRetryableError
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), "does not decode into worker.in") {
		t.Errorf("bad input: %v; want a non-retryable decode error", err)
	}
	if _, err := f(context.Background(), json.RawMessage(`{"N":-1}`)); err == nil || errors.As(err, &nr) {
		t.Errorf("an activity error: %v; want it as is (retryable)", err)
	}
}

func TestCallRecoversPanics(t *testing.T) {
	_, err := call(context.Background(), func(context.Context, []byte) ([]byte, error) { panic("boom") }, nil)
	if err == nil || !strings.Contains(err.Error(), "activity panicked: boom") {
		t.Errorf("call of a panicking activity: %v", err)
	}
	if NonRetryable(nil) != nil {
		t.Error("NonRetryable(nil) is not nil")
	}
}

func TestSlots(t *testing.T) {
	s := newSlots(3)
	if n := s.take(context.Background(), 2); n != 2 {
		t.Fatalf("take 2 of 3: %d", n)
	}
	if n := s.take(context.Background(), 5); n != 1 {
		t.Fatalf("take the last: %d", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n := s.take(ctx, 1); n != 0 {
		t.Fatalf("take with none free and ctx ended: %d", n)
	}
	done := make(chan int)
	go func() { done <- s.take(context.Background(), 4) }()
	s.give(2)
	if n := <-done; n != 2 {
		t.Fatalf("take after give 2: %d", n)
	}
}
