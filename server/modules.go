package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/skeinrun/skein/store"
)

// deploy: POST /v1/modules?name=N with the .wasm bytes as the body.
func (a *api) deploy(w http.ResponseWriter, r *http.Request) {
	tooLarge := &requestError{status: http.StatusRequestEntityTooLarge, code: CodeTooLarge,
		msg: fmt.Sprintf("module is larger than the limit of %d bytes", a.o.MaxModuleBytes)}
	if r.ContentLength > a.o.MaxModuleBytes {
		tooLarge.msg = fmt.Sprintf("module is %d bytes, larger than the limit of %d bytes", r.ContentLength, a.o.MaxModuleBytes)
		a.fail(w, r, tooLarge)
		return
	}
	wasm, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.o.MaxModuleBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			a.fail(w, r, tooLarge)
			return
		}
		a.fail(w, r, badRequest("reading the module: %v", err))
		return
	}
	if len(wasm) == 0 {
		a.fail(w, r, &requestError{status: http.StatusBadRequest, code: CodeInvalidModule,
			msg: "empty request body: send the .wasm file's bytes as the body"})
		return
	}
	name := r.URL.Query().Get("name")
	sum := sha256.Sum256(wasm)
	_, err = a.st.ModuleInfo(r.Context(), hex.EncodeToString(sum[:]))
	existed := err == nil
	m, err := a.h.Deploy(r.Context(), name, wasm)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if existed {
		status = http.StatusOK
	}
	writeJSON(w, status, moduleJSON(m))
}

// modules: GET /v1/modules.
func (a *api) modules(w http.ResponseWriter, r *http.Request) {
	ms, err := a.st.Modules(r.Context())
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
	m, err := a.st.ModuleInfo(r.Context(), ref)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("no module %q (by hash or name)", ref)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, moduleJSON(m))
}
