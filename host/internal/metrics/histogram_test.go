package metrics

import (
	"bytes"
	"testing"
)

// Buckets are cumulative, bounds inclusive, and the count is the +Inf bucket.
func TestHistogram(t *testing.T) {
	h := NewHistogram(1, 2)
	for _, v := range []float64{0.5, 1, 1.5, 3} {
		h.Observe(v)
	}
	var b bytes.Buffer
	h.Write(&b, "x")
	want := "x_bucket{le=\"1\"} 2\nx_bucket{le=\"2\"} 3\nx_bucket{le=\"+Inf\"} 4\nx_sum 6\nx_count 4\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
