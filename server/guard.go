package server

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// The checks every request passes before its handler, in this order:
//
//  1. Host: without a token, the Host header must name this server (a
//     loopback name or address, or one of Options.AllowedHosts), so that a
//     web page whose own name resolves to 127.0.0.1 (DNS rebinding) cannot
//     reach the API: 421.
//  2. Origin: a request a browser sends from a page of another origin is
//     refused, whatever its method: 403. The UI is same-origin.
//  3. Principal (auth.go): every request but the UI's static files and
//     webhook deliveries (which check their own signature) needs the
//     token or a key's secret, 401, unless the server has neither a
//     token nor a key; then the principal's role must allow the route
//     (roles.go): 403.
//  4. Content-Type: a write (POST) must say its body is JSON, or for a
//     module upload WebAssembly (application/wasm or
//     application/octet-stream): 415. A web page can send text/plain or a
//     form to any server without asking it first, but not these. A
//     webhook delivery takes any body: the hook's workflow reads it.
//
// The first three answers close the connection, so a client refused
// before it is known cannot keep one open.

// routeClass is what a route gets besides its handler: the content types
// its writes accept and how long reading its request and writing its
// answer may take. A new kind of route (a long poll, say) is a new class
// with its own Options field.
type routeClass struct {
	bodyTypes []string // nil: any
	public    bool     // no token needed (a webhook delivery checks its own signature)
	timeout   func(o *Options) time.Duration
	limit     string // the timeout's flag and Options field, for messages
}

var (
	// apiRoute is an ordinary API call: a small JSON body, a quick answer.
	apiRoute = routeClass{bodyTypes: []string{"application/json"},
		timeout: func(o *Options) time.Duration { return o.RequestTimeout },
		limit:   "--request-timeout, server.Options.RequestTimeout"}
	// uploadRoute is a module upload: a large body, compiled before the answer.
	uploadRoute = routeClass{bodyTypes: []string{"application/wasm", "application/octet-stream"},
		timeout: func(o *Options) time.Duration { return o.UploadTimeout },
		limit:   "--upload-timeout, server.Options.UploadTimeout"}
	// hookRoute is a webhook delivery: any body, no API token (a hook
	// with a secret checks the delivery's signature instead).
	hookRoute = routeClass{public: true,
		timeout: func(o *Options) time.Duration { return o.RequestTimeout },
		limit:   "--request-timeout, server.Options.RequestTimeout"}
)

// answerGrace is how long past its route's deadline a request has to
// write its answer: time to say that the deadline passed.
const answerGrace = 5 * time.Second

// handle registers h at pattern with the checks and deadlines of class c.
// The deadlines are set when the handler starts (http.ResponseController):
// they replace the http.Server's ReadTimeout and WriteTimeout, which still
// bound what is answered before any handler (401, 404). Reading the body
// past the deadline fails with a *bodyTimeoutError.
func (a *api) handle(mux *http.ServeMux, pattern string, c routeClass, h http.HandlerFunc) {
	a.routes[pattern] = c
	d := c.timeout(&a.o)
	mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.setDeadlines(w, r, time.Now().Add(d))
		r.Body = &deadlineBody{ReadCloser: r.Body, d: d, limit: c.limit}
		h(w, r)
	}))
}

// setDeadlines sets the connection's read deadline for this request to t,
// and its write deadline answerGrace later. A ResponseWriter that has no
// connection (a test's recorder) has no deadlines to set.
func (a *api) setDeadlines(w http.ResponseWriter, r *http.Request, t time.Time) {
	rc := http.NewResponseController(w)
	err := errors.Join(rc.SetReadDeadline(t), rc.SetWriteDeadline(t.Add(answerGrace)))
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		a.log.Debug("skein api: cannot set the request's deadlines", "path", r.URL.Path, "err", err)
	}
}

// deadlineBody is a request body whose read deadline is its route's.
type deadlineBody struct {
	io.ReadCloser
	d     time.Duration
	limit string
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &bodyTimeoutError{d: b.d, limit: b.limit, err: err}
	}
	return n, err
}

// bodyTimeoutError is a request body not received within its route's
// timeout; it answers 408.
type bodyTimeoutError struct {
	d     time.Duration
	limit string
	err   error
}

func (e *bodyTimeoutError) Error() string {
	return fmt.Sprintf("the request body did not arrive within %v (limit %s)", e.d, e.limit)
}

func (e *bodyTimeoutError) Unwrap() error { return e.err }

// guard wraps next, which serves mux's routes, in the checks above.
func (a *api) guard(mux *http.ServeMux, next http.Handler) http.Handler {
	// Digests of equal length: the comparison's time says nothing about
	// the token's length.
	want := sha256.Sum256([]byte("Bearer " + a.o.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.o.Token == "" && !a.hostAllowed(r.Host) {
			refuse(w, http.StatusMisdirectedRequest, CodeMisdirected, fmt.Sprintf(
				"Host %q is not an address of this server: without --token, requests must name it by a loopback name or address (localhost, 127.0.0.1, [::1]) or its listen address; see --allow-host",
				r.Host))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
			refuse(w, http.StatusForbidden, CodeForbidden, fmt.Sprintf(
				"cross-origin request refused: Origin %q is not this server (%s); only the server's own web UI may call the API from a browser", o, r.Host))
			return
		}
		if !isUI(r) && !a.public(mux, r) {
			p, err := a.authenticate(r, want)
			if err != nil {
				a.refuseAuth(w, r, err)
				return
			}
			_, pattern := mux.Handler(r)
			if pattern != "/" && !allows(p.Role, pattern) {
				a.fail(w, r, forbiddenRoute(p, pattern))
				return
			}
			if p.Role != RoleRoot {
				if _, err := p.NamespaceFor(r); err != nil { // a header naming another namespace
					a.fail(w, r, err)
					return
				}
			}
			r = withPrincipal(r, p, pattern)
		}
		if err := a.checkBodyType(mux, r); err != nil {
			a.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// public reports whether r is for a route that needs no token.
func (a *api) public(mux *http.ServeMux, r *http.Request) bool {
	_, pattern := mux.Handler(r)
	return a.routes[pattern].public
}

// refuse answers an error and closes the connection after it.
func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Connection", "close")
	writeError(w, status, code, msg)
}

// checkBodyType checks the Content-Type of a write against its route's.
func (a *api) checkBodyType(mux *http.ServeMux, r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodDelete: // no body read
		return nil
	}
	_, pattern := mux.Handler(r)
	c, ok := a.routes[pattern]
	if !ok || c.bodyTypes == nil { // no such endpoint (the mux answers 404 or 405), or any body
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && slices.Contains(c.bodyTypes, mt) {
		return nil
	}
	got := "no Content-Type"
	if ct != "" {
		got = fmt.Sprintf("Content-Type %q", ct)
	}
	return &requestError{status: http.StatusUnsupportedMediaType, code: CodeUnsupportedMediaType,
		msg: fmt.Sprintf("%s %s: %s; send Content-Type: %s", r.Method, r.URL.Path, got, strings.Join(c.bodyTypes, " or "))}
}

// hostAllowed reports whether a Host header names this server: empty (an
// HTTP/1.0 client; no browser sends that), a loopback name or address, or
// one of Options.AllowedHosts.
func (a *api) hostAllowed(hostport string) bool {
	h := hostOnly(hostport)
	if h == "" || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	if ip != nil && ip.IsLoopback() {
		return true
	}
	for _, allowed := range a.o.AllowedHosts {
		allowed = hostOnly(allowed)
		if h == allowed {
			return true
		}
		if aip := net.ParseIP(allowed); ip != nil && aip != nil && aip.Equal(ip) {
			return true
		}
	}
	return false
}

// hostOnly is the host of a host[:port], lower case, without brackets or
// a final dot.
func hostOnly(hostport string) string {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// sameOrigin reports whether a browser's Origin header names the server
// the request was sent to: http or https, and the same host and port as
// the Host header (browsers leave a default port out of both). "null"
// (a sandboxed or local page) is never the same origin.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, host)
}
