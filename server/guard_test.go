package server

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTokenCheckTimeIgnoresLength: a wrong token of the secret's length
// and one of another length take the same time to refuse, so the time of
// a 401 does not tell the token's length. (A plain ConstantTimeCompare
// returns at once on a length mismatch and walks every byte otherwise.)
// The token is long so that a walk over it would stand out.
func TestTokenCheckTimeIgnoresLength(t *testing.T) {
	token := strings.Repeat("k", 256<<10)
	ta := newTestAPI(t, Options{Token: token})
	sameLen := "Bearer " + strings.Repeat("x", len(token))
	otherLen := sameLen + "x"
	refuse := func(auth string) time.Duration {
		req := newRequest("GET", "/v1/runs", nil)
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		start := time.Now()
		ta.h.ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("a wrong token: %d, want 401", rec.Code)
		}
		return d
	}
	var same, other []time.Duration
	for range 201 {
		same = append(same, refuse(sameLen))
		other = append(other, refuse(otherLen))
	}
	slices.Sort(same)
	slices.Sort(other)
	// The first quartile: the least disturbed by other work on the
	// machine. A walk over the token costs some 100 times the refusal of
	// a length mismatch; a factor of 3 leaves room for noise.
	ms, mo := same[len(same)/4], other[len(other)/4]
	ratio := float64(ms) / float64(mo)
	t.Logf("first-quartile time to refuse: %v for a token of the secret's length, %v for one of another length (ratio %.2f)", ms, mo, ratio)
	if ratio > 3 || ratio < 1.0/3 {
		t.Errorf("refusing a token of the secret's length takes %v, of another length %v: the time tells the length", ms, mo)
	}
}

func TestHostAndOrigin(t *testing.T) {
	a := &api{o: Options{AllowedHosts: []string{"skein.lan", "192.0.2.7", "[2001:db8::1]"}}}
	for host, ok := range map[string]bool{
		"": true, "localhost": true, "localhost:7070": true, "LocalHost.:7070": true, "app.localhost:1": true,
		"127.0.0.1:7070": true, "127.9.9.9": true, "[::1]:7070": true, "[::1]": true,
		"skein.lan:7070": true, "SKEIN.LAN": true, "192.0.2.7:80": true, "[2001:db8::1]:7070": true,
		"evil.example:7070": false, "localhost.evil.example": false, "192.0.2.8:7070": false, "0.0.0.0:7070": false,
		"127.0.0.1.evil.example": false, "skein.lan.evil.example": false,
	} {
		if got := a.hostAllowed(host); got != ok {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, ok)
		}
	}
	for _, c := range []struct {
		origin, host string
		ok           bool
	}{
		{"http://127.0.0.1:7070", "127.0.0.1:7070", true},
		{"https://skein.lan", "skein.lan", true},
		{"http://LOCALHOST:7070", "localhost:7070", true},
		{"http://127.0.0.1:7071", "127.0.0.1:7070", false},
		{"http://localhost:7070", "127.0.0.1:7070", false},
		{"null", "127.0.0.1:7070", false},
		{"file://", "127.0.0.1:7070", false},
		{"chrome-extension://abc", "abc", false},
		{"http://evil.example", "127.0.0.1:7070", false},
	} {
		if got := sameOrigin(c.origin, c.host); got != c.ok {
			t.Errorf("sameOrigin(%q, %q) = %v, want %v", c.origin, c.host, got, c.ok)
		}
	}
}

// TestLimitListener: at most n connections are accepted at once; closing
// one lets the next in; Close ends a waiting Accept.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(inner, 2)
	defer ln.Close()
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	accepted := make(chan net.Conn, 3)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			accepted <- c
		}
	}()
	first, second := <-accepted, <-accepted
	defer second.Close()
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted while two were open")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	first.Close() // a second Close does not free another slot
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("closing a connection did not let the next one in")
	}
	ln.Close()
	select {
	case err := <-acceptErr:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the waiting Accept")
	}
}
