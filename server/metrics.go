package server

import (
	"bytes"
	"net/http"
)

// metricsContentType is the Prometheus text exposition format.
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// metrics: GET /metrics, the host's metrics in the Prometheus text format
// (host.WriteMetrics lists them). Behind the token like the API when one
// is set: a Prometheus scrape job sends it with
// `authorization: {credentials: TOKEN}`.
func (a *api) metrics(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := a.h.WriteMetrics(r.Context(), &buf); err != nil {
		// What could be read is still worth answering.
		a.log.Error("skein api: metrics", "err", err)
	}
	w.Header().Set("Content-Type", metricsContentType)
	_, _ = w.Write(buf.Bytes()) // the client left: no one to tell
}
