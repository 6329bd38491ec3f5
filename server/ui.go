package server

import (
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/runjson"
	"github.com/skeinrun/skein/store"
)

// The web UI: static files embedded in the binary (server/ui/), served
// at / and /ui/. They are plain HTML, CSS and JavaScript, with no build
// step and nothing fetched from elsewhere; the page calls the /v1 API
// with the token the user types in (kept in the tab's sessionStorage).
// docs/ui.md describes it.

//go:embed ui
var uiFiles embed.FS

// uiFS is server/ui/ as the root.
var uiFS = func() fs.FS {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err)
	}
	return sub
}()

// uiCSP keeps the page to its own files: no inline script, no other origin.
const uiCSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// isUI reports whether r asks for the UI's static files, which are served
// without the token (they hold no data; the page asks for the token).
func isUI(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/")
}

// uiHandler serves index.html at / and the other files under /ui/.
func uiHandler() http.Handler {
	files := http.StripPrefix("/ui/", http.FileServerFS(uiFS))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/" {
			page, err := fs.ReadFile(uiFS, "index.html")
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			h.Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(page) // the client left: no one to tell
			return
		}
		if r.URL.Path == "/ui/" || strings.HasSuffix(r.URL.Path, "/") {
			writeError(w, http.StatusNotFound, CodeNotFound, "no file "+r.URL.Path)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// The documents of GET /v1/runs/{id}/ops (defined in package client).
type (
	// RunOps is client.RunOps: the run and every record of its journal.
	RunOps = client.RunOps
	// Op is client.Op: one journal record of a run.
	Op = client.Op
)

// ops: GET /v1/runs/{id}/ops.
func (a *api) ops(w http.ResponseWriter, r *http.Request) {
	run, outs, ok := a.inspect(w, r)
	if !ok {
		return
	}
	v := RunOps{Run: runJSON(run), Ops: make([]Op, 0, len(outs)), Waiting: runjson.WaitingOf(run, outs)}
	if runs := []Run{v.Run}; a.withAttrs(r, runs) == nil {
		v.Run = runs[0] // its search attributes; without them if they cannot be read
	}
	if !a.addTasks(w, r, v.Waiting) {
		return
	}
	tries, drops, ok := a.attemptsOf(w, r)
	if !ok {
		return
	}
	v.Drops = drops
	if m, err := a.c(r).Module(r.Context(), run.ModuleHash); err == nil {
		v.ModuleName = m.Name
	} else if !errors.Is(err, store.ErrNotFound) {
		a.fail(w, r, err)
		return
	}
	for _, o := range outs {
		op := Op{Key: o.Key, Kind: o.Kind, Function: o.Function, Status: string(o.Status), Attempts: o.Attempts,
			Seq: o.Seq, Waited: o.Waited, Orphaned: o.Orphaned, VTime: timeText(o.VTime), Deadline: timeText(o.Deadline),
			Updated: o.UpdatedAt.UTC().Format(time.RFC3339Nano)}
		if len(o.Value) > 0 {
			op.Value = json.RawMessage(o.Value)
		}
		if len(o.Schema) > 0 && json.Valid(o.Schema) {
			op.Schema = json.RawMessage(o.Schema)
		}
		if o.Error != "" {
			e := o.Error
			op.Error = &e
		}
		opTimes(&op, o, tries[o.Key])
		if o.Kind == "child" {
			c := host.ChildRunID(run.ID, o.Key)
			op.Child = &c
		}
		v.Ops = append(v.Ops, op)
	}
	writeJSON(w, http.StatusOK, v)
}

// timeText is t in RFC 3339, nil for the zero time.
func timeText(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
