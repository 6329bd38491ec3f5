package metrics

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"sync/atomic"
)

// histogram is a Prometheus histogram with fixed upper bounds.
type Histogram struct {
	bounds []float64
	counts []atomic.Uint64 // per bucket (not cumulative); the last is +Inf
	sum    atomic.Uint64   // float64 bits
	count  atomic.Uint64
}

func NewHistogram(bounds ...float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *Histogram) Observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	h.count.Add(1)
}

func (h *Histogram) Write(w io.Writer, name string) {
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
	fmt.Fprintf(w, "%s_sum %s\n", name, strconv.FormatFloat(math.Float64frombits(h.sum.Load()), 'g', -1, 64))
	// The count is the +Inf bucket, so the two always agree in one scrape.
	fmt.Fprintf(w, "%s_count %d\n", name, cum)
}
