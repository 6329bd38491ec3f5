package host

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skeinrun/skein/store"
)

// NamespaceLabel is the label of every series about one namespace's
// runs, ops, tasks and executions (docs/observability.md).
const NamespaceLabel = "namespace"

// NamespaceGatherer returns g's series of namespace ns only: those whose
// namespace label is ns ("" is the default namespace). Series about the
// server as a whole, which have no namespace label (the store's latency,
// the process's instances and caches), are left out too, and so is a
// family left with no series. It is what GET /metrics serves a key of
// one namespace; the root sees g whole. An error of g is returned with
// what could be gathered, filtered.
func NamespaceGatherer(g prometheus.Gatherer, ns string) prometheus.Gatherer {
	if ns == "" {
		ns = store.DefaultNamespace
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		fams, err := g.Gather()
		out := fams[:0]
		for _, f := range fams {
			ms := f.Metric[:0]
			for _, m := range f.Metric {
				if namespaceOf(m) == ns {
					ms = append(ms, m)
				}
			}
			if len(ms) > 0 {
				f.Metric = ms
				out = append(out, f)
			}
		}
		return out, err
	})
}

// namespaceOf is m's namespace label, or "" when it has none.
func namespaceOf(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == NamespaceLabel {
			return l.GetValue()
		}
	}
	return ""
}
