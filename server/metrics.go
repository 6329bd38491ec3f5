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
// sends it with `authorization: {credentials: TOKEN}`. Outside /v1. A
// request served one namespace (metricsNamespace) gets that namespace's
// series only (host.NamespaceGatherer).
func (a *api) metrics(w http.ResponseWriter, r *http.Request) {
	// The gatherer reads the store under the request's context, so a
	// handler per scrape.
	g := a.h.MetricsGatherer(r.Context())
	if a.metricsScoped(r) {
		g = a.c(r).MetricsGatherer(r.Context()) // the namespace's series only
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{
		// What could be read is still worth answering.
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      promLog{a.log},
	}).ServeHTTP(w, r)
}

// metricsScoped reports whether GET /metrics serves the request its
// namespace's series only; otherwise it serves every namespace's and the
// server's. A key of a namespace gets its namespace's; root gets all,
// unless it names one (X-Skein-Namespace).
func (a *api) metricsScoped(r *http.Request) bool {
	return principalOf(r).Role != RoleRoot || r.Header.Get(NamespaceHeader) != ""
}

// promLog logs the handler's errors (a failed store read) to the API's
// log.
type promLog struct{ log *slog.Logger }

// Println logs v as the error of a scrape.
func (l promLog) Println(v ...any) {
	l.log.Error("skein api: metrics", "err", strings.TrimSpace(fmt.Sprintln(v...)))
}
