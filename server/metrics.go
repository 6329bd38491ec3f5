package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skeinrun/skein/host"
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
	if ns := a.metricsNamespace(r); ns != "" {
		g = host.NamespaceGatherer(g, ns)
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{
		// What could be read is still worth answering.
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      promLog{a.log},
	}).ServeHTTP(w, r)
}

// metricsNamespace is the namespace whose series GET /metrics serves the
// request, or "" for every namespace's and the server's. For now every
// request gets all of them (as before namespaces). The coordinator
// connects it to the request's principal (principalOf): a root
// principal "", any other the namespace of its key (Principal.Namespace),
// so that a key of namespace acme sees acme's series only.
func (a *api) metricsNamespace(*http.Request) string {
	return ""
}

// promLog logs the handler's errors (a failed store read) to the API's
// log.
type promLog struct{ log *slog.Logger }

// Println logs v as the error of a scrape.
func (l promLog) Println(v ...any) {
	l.log.Error("skein api: metrics", "err", strings.TrimSpace(fmt.Sprintln(v...)))
}
