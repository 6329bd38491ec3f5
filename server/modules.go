package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"slices"

	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/store"
)

// deploy: POST /v1/modules?name=N with the .wasm bytes as the body. The
// body is spooled to a temporary file, a buffer at a time, so an upload
// costs no memory while it arrives or while it waits for a deploy slot
// (host.Config.MaxConcurrentDeploys); the host reads it into memory once
// its turn comes.
func (a *api) deploy(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > a.o.MaxModuleBytes {
		a.fail(w, r, a.tooLarge(fmt.Sprintf("the module is %d bytes", r.ContentLength)))
		return
	}
	f, size, sum, err := a.spool(w, r)
	if f != nil {
		defer func() {
			// The spooled module, read by now: a failure leaves a
			// temporary file behind, nothing else.
			_ = f.Close()
			if err := os.Remove(f.Name()); err != nil {
				a.log.Warn("skein api: deploy: remove the spooled module", "err", err)
			}
		}()
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if size == 0 {
		a.fail(w, r, &requestError{status: http.StatusBadRequest, code: CodeInvalidModule,
			msg: "empty request body: send the .wasm file's bytes as the body"})
		return
	}
	_, err = a.c(r).Module(r.Context(), hex.EncodeToString(sum.Sum(nil)))
	existed := err == nil
	m, err := a.c(r).DeployReader(r.Context(), r.URL.Query().Get("name"), f, size)
	if err != nil {
		if r.Context().Err() != nil { // the client went away: no one to answer
			a.log.Debug("skein api: deploy abandoned by the client", "err", err)
			return
		}
		a.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if existed {
		status = http.StatusOK
	}
	writeJSON(w, status, moduleJSON(m))
}

// spool copies the request body to a new temporary file (rewound) and
// returns its size and sha256.
func (a *api) spool(w http.ResponseWriter, r *http.Request) (*os.File, int64, hash.Hash, error) {
	f, err := os.CreateTemp("", "skein-upload-*.wasm")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("spooling the upload: %w", err)
	}
	sum := sha256.New()
	size, err := io.Copy(io.MultiWriter(f, sum), http.MaxBytesReader(w, r.Body, a.o.MaxModuleBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return f, 0, nil, a.tooLarge(fmt.Sprintf("the module is more than %d bytes", a.o.MaxModuleBytes))
		}
		return f, 0, nil, badRequest("reading the module: %v", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return f, 0, nil, fmt.Errorf("spooling the upload: %w", err)
	}
	return f, size, sum, nil
}

// tooLarge is the 413 of an upload over Options.MaxModuleBytes, worded
// like the host's limit errors.
func (a *api) tooLarge(what string) error {
	le := a.h.NewLimitError(what, "MaxModuleBytes", byteSize(a.o.MaxModuleBytes))
	return &requestError{status: http.StatusRequestEntityTooLarge, code: CodeTooLarge, msg: "module rejected: " + le.Error()}
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// moduleLimitStatus is the answer to a module refused by one of the
// host's limits: 413 for its size, 507 for the quota on stored modules,
// 422 for the others (its structure, its compile time).
func moduleLimitStatus(le *host.LimitError) (int, string) {
	switch le.Limit {
	case "MaxModuleBytes":
		return http.StatusRequestEntityTooLarge, CodeTooLarge
	case "MaxStoredModuleBytes":
		return http.StatusInsufficientStorage, CodeQuotaExceeded
	}
	return http.StatusUnprocessableEntity, CodeModuleLimit
}

// modules: GET /v1/modules.
func (a *api) modules(w http.ResponseWriter, r *http.Request) {
	ms, err := a.c(r).Modules(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	l := ModuleList{Modules: make([]Module, 0, len(ms))}
	for _, m := range ms {
		l.Modules = append(l.Modules, moduleJSON(m))
	}
	writeJSON(w, http.StatusOK, l)
}

// module: GET /v1/modules/{ref}, ref a hash or a name.
func (a *api) module(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	m, err := a.c(r).Module(r.Context(), ref)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("no module %q (by hash or name)", ref)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if slices.Contains(m.Names, ref) { // asked by name: answer with that one
		m.Name = ref
	}
	writeJSON(w, http.StatusOK, moduleJSON(m))
}
