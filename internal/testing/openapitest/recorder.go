package openapitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
)

// Recorder is a reverse proxy on 127.0.0.1 in front of a server: it
// passes every request on unchanged (but for its Host, which names the
// server) and records the exchange, so that a test can send its clients
// (a CLI, package client) to it and validate every answer afterwards.
type Recorder struct {
	// URL is the proxy's address, http://127.0.0.1:PORT.
	URL string
	srv *httptest.Server
	mu  sync.Mutex
	xs  []Exchange
}

// NewRecorder starts a Recorder in front of the server at target.
func NewRecorder(target string) (*Recorder, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("openapitest: the server's URL %q: %w", target, err)
	}
	rec := &Recorder{}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "openapitest: reading the request: "+err.Error(), http.StatusBadGateway)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		x := Exchange{Method: r.Method, URL: r.URL, ReqHeader: r.Header.Clone(), ReqBody: body}
		rw := &recordingWriter{ResponseWriter: w}
		proxy.ServeHTTP(rw, r)
		x.Status, x.RespHeader, x.RespBody = rw.status, rw.header, rw.body.Bytes()
		if x.Status == 0 {
			x.Status, x.RespHeader = http.StatusOK, w.Header().Clone()
		}
		rec.mu.Lock()
		rec.xs = append(rec.xs, x)
		rec.mu.Unlock()
	}))
	rec.URL = rec.srv.URL
	return rec, nil
}

// Exchanges returns the exchanges recorded so far, in the order they
// ended.
func (rec *Recorder) Exchanges() []Exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Exchange(nil), rec.xs...)
}

// Close stops the proxy.
func (rec *Recorder) Close() { rec.srv.Close() }

// recordingWriter keeps a copy of the answer it writes.
type recordingWriter struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (w *recordingWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 { // not a 1xx
		w.status, w.header = status, w.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.body.Write(p)
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
