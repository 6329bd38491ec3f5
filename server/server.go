// Package server is skein's HTTP JSON API under /v1/: deploy modules,
// start, list, inspect and cancel runs, settle external promises. It
// only records intent in the store through the host; the runs themselves
// are executed by the host's workers (host.Work), which `skein serve`
// runs in the same process. docs/api.md specifies every endpoint.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// Options configure the API.
type Options struct {
	// Token, if set, is required as "Authorization: Bearer TOKEN" on
	// every request; others get 401.
	Token string
	// MaxModuleBytes caps an uploaded module; default 64 MiB. Larger
	// uploads get 413.
	MaxModuleBytes int64
	// MaxRequestBytes caps a JSON request body; default 8 MiB.
	MaxRequestBytes int64
	// Logger receives internal errors. Default: slog.Default().
	Logger *slog.Logger
	// AllowedHosts are the host names and addresses, besides loopback
	// ones, that a request's Host header may name when Token is empty
	// (skein serve passes its listen address and --allow-host). Without a
	// token, a request for any other Host gets 421, so that a web page
	// whose own name resolves to this machine (DNS rebinding) cannot use
	// the API.
	AllowedHosts []string
	// RequestTimeout bounds reading an API request's body and writing its
	// answer, counted from the end of its headers; default 1m.
	RequestTimeout time.Duration
	// UploadTimeout is RequestTimeout for a module upload
	// (POST /v1/modules), whose body may be large and is compiled before
	// the answer; default 10m.
	UploadTimeout time.Duration
	// MaxClaimWait caps how long a worker's claim of activity tasks
	// waits for one (its "wait_ms"); default DefaultMaxClaimWait.
	MaxClaimWait time.Duration
	// MaxHookBodyBytes caps the body of a webhook delivery
	// (POST /v1/hooks/{name}); default DefaultMaxHookBodyBytes. Larger
	// bodies get 413.
	MaxHookBodyBytes int64
	// Stop, when it ends, ends the claims waiting for tasks (they answer
	// with none), so that a shutdown need not wait for them. Default:
	// never.
	Stop context.Context
}

// Defaults of Options and of the connection limits of skein serve.
const (
	DefaultMaxModuleBytes  = 64 << 20
	DefaultMaxRequestBytes = 8 << 20
	DefaultRequestTimeout  = time.Minute
	DefaultUploadTimeout   = 10 * time.Minute
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout bounds how long a kept-alive connection may wait
	// for its next request.
	DefaultIdleTimeout = time.Minute
	// DefaultMaxConnections caps the connections served at once (see
	// LimitListener).
	DefaultMaxConnections = 1024
)

type api struct {
	h      host.Client
	o      Options
	log    *slog.Logger
	routes map[string]routeClass // by mux pattern (guard.go)
	keys   host.KeyManager       // API keys (auth.go); nil without
	def    host.Client           // the default namespace's view (namespace.go)
}

// New returns the API handler of h: a host's client role (a *host.Host).
// Runs execute where a host works (host.Worker).
func New(h host.Client, o Options) http.Handler {
	a, mux := newAPI(h, o)
	return a.guard(mux, a.scoped(mux))
}

// newAPI returns the API of h and its routes; a.routes holds every
// pattern registered.
func newAPI(h host.Client, o Options) (*api, *http.ServeMux) {
	if o.MaxModuleBytes <= 0 {
		o.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxHookBodyBytes <= 0 {
		o.MaxHookBodyBytes = DefaultMaxHookBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.UploadTimeout <= 0 {
		o.UploadTimeout = DefaultUploadTimeout
	}
	if o.MaxClaimWait <= 0 {
		o.MaxClaimWait = DefaultMaxClaimWait
	}
	if o.Stop == nil {
		o.Stop = context.Background()
	}
	a := &api{h: grantedClient{h}, o: o, log: o.Logger, routes: map[string]routeClass{}}
	a.keys, _ = h.(host.KeyManager)           // nil: the token (or none) only
	a.def, _ = a.h.In(store.DefaultNamespace) // the name keeps the rule: no error
	mux := http.NewServeMux()
	a.routeKeys(mux) // keys.go
	a.handle(mux, "POST /v1/modules", uploadRoute, a.deploy)
	a.handle(mux, "GET /v1/modules", apiRoute, a.modules)
	a.handle(mux, "GET /v1/modules/{ref}", apiRoute, a.module)
	a.handle(mux, "POST /v1/runs", apiRoute, a.start)
	a.handle(mux, "GET /v1/runs", apiRoute, a.runs)
	a.handle(mux, "GET /v1/runs/{id}", apiRoute, a.run)
	a.handle(mux, "GET /v1/runs/{id}/outcomes", apiRoute, a.outcomes)
	a.handle(mux, "POST /v1/runs/{id}/cancel", apiRoute, a.cancel)
	a.handle(mux, "POST /v1/runs/{id}/reset", apiRoute, a.reset)
	a.handle(mux, "POST /v1/promises/{id}", apiRoute, a.resolve)
	a.handle(mux, "GET /v1/runs/{id}/ops", apiRoute, a.ops)
	a.handle(mux, "GET /v1/runs/{id}/leases", apiRoute, a.leases)
	a.handle(mux, "GET /v1/openapi.json", apiRoute, a.openAPI) // openapi.go
	a.routeAttrs(mux)                                          // attrs.go
	a.routeNamespaces(mux)                                     // namespaces.go
	a.handle(mux, "GET /metrics", apiRoute, a.metrics)
	a.routePause(mux)     // pause.go
	a.routeTasks(mux)     // tasks.go
	a.routeSchedules(mux) // schedules.go
	a.routePrune(mux)     // prune.go
	a.routeBatches(mux)   // batches.go
	// The web UI (ui.go): index.html at /, the other files under /ui/.
	ui := uiHandler()
	a.handle(mux, "GET /{$}", apiRoute, ui.ServeHTTP)
	a.handle(mux, "GET /ui/", apiRoute, ui.ServeHTTP)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// The path may name an endpoint that takes another method.
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
			r2 := r.Clone(r.Context())
			r2.Method = m
			if _, p := mux.Handler(r2); m != r.Method && p != "/" && p != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, fmt.Sprintf("%s %s: this endpoint takes %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
			return
		}
		writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no endpoint %s %s (see docs/api.md)", r.Method, r.URL.Path))
	})
	return a, mux
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		// The status line is sent: the client sees a cut answer.
		slog.Debug("skein api: write the answer", "err", err)
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
}

// fail answers err with the status its kind calls for; what is not a
// known kind is an internal error, logged.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	var me *host.ModuleError
	var ce *host.ConflictError
	var mbe *http.MaxBytesError
	var re *requestError
	var bte *bodyTimeoutError
	switch {
	case errors.As(err, &bte):
		writeError(w, http.StatusRequestTimeout, CodeRequestTimeout, bte.Error())
	case errors.As(err, &re):
		writeError(w, re.status, re.code, re.msg)
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("request body is larger than the limit of %d bytes", mbe.Limit))
	case errors.As(err, &me):
		status, code := http.StatusBadRequest, CodeInvalidModule
		if le, ok := errors.AsType[*host.LimitError](me); ok {
			status, code = moduleLimitStatus(le) // modules.go
		}
		writeError(w, status, code, me.Error())
	case errors.As(err, &ce):
		writeError(w, http.StatusConflict, CodeConflict, ce.Error())
	case errors.Is(err, store.ErrInvalidText), errors.Is(err, host.ErrInvalid), errors.Is(err, store.ErrAttrCond):
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
	case errors.Is(err, store.ErrNotFound), errors.Is(err, host.ErrNotFound):
		writeError(w, http.StatusNotFound, CodeNotFound, err.Error())
	case errors.Is(err, host.ErrTerminal), errors.Is(err, store.ErrConflict), errors.Is(err, host.ErrConflict), errors.Is(err, store.ErrAttrLimit):
		writeError(w, http.StatusConflict, CodeConflict, err.Error())
	case errors.Is(err, store.ErrFull):
		a.log.Error("skein api: the database is full", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInsufficientStorage, CodeInsufficientStorage, err.Error())
	case errors.Is(err, store.ErrUnavailable):
		a.log.Warn("skein api: the store is unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, err.Error())
	default:
		a.log.Error("skein api: internal error", "method", r.Method, "path", r.URL.Path, "run", r.PathValue("id"), "err", err)
		writeError(w, http.StatusInternalServerError, CodeInternal, err.Error())
	}
}

// requestError is an error answer decided by a handler.
type requestError struct {
	status    int
	code, msg string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{status: http.StatusBadRequest, code: CodeBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &requestError{status: http.StatusNotFound, code: CodeNotFound, msg: fmt.Sprintf(format, args...)}
}

// decode reads a JSON request body into v, strictly: unknown fields and
// trailing data are errors. An empty body is allowed when optional.
func (a *api) decode(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	body := http.MaxBytesReader(w, r.Body, a.o.MaxRequestBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		var bte *bodyTimeoutError
		switch {
		case errors.As(err, &mbe), errors.As(err, &bte):
			return err
		case errors.Is(err, io.EOF) && optional:
			return nil
		case errors.Is(err, io.EOF):
			return badRequest("empty request body: want a JSON object")
		}
		return badRequest("request body is not the JSON object this endpoint wants: %v", err)
	}
	if dec.More() {
		return badRequest("request body holds more than one JSON value")
	}
	return nil
}
