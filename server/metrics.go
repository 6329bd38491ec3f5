package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics: GET /metrics, the host's metrics (host.MetricsGatherer lists
// them) through the Prometheus client library's handler, which
// negotiates the format (the text format by default) and compression.
// Behind the token like the API when one is set: a Prometheus scrape job
// sends it with `authorization: {credentials: TOKEN}`. Outside /v1.
func (a *api) metrics(w http.ResponseWriter, r *http.Request) {
	// The gatherer reads the store under the request's context, so a
	// handler per scrape.
	promhttp.HandlerFor(a.h.MetricsGatherer(r.Context()), promhttp.HandlerOpts{
		// What could be read is still worth answering.
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      promLog{a.log},
	}).ServeHTTP(w, r)
}

// promLog logs the handler's errors (a failed store read) to the API's
// log.
type promLog struct{ log *slog.Logger }

// Println logs v as the error of a scrape.
func (l promLog) Println(v ...any) {
	l.log.Error("skein api: metrics", "err", strings.TrimSpace(fmt.Sprintln(v...)))
}
