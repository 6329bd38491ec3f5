package shape

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// benchValue is an Order with n lines, about 60 bytes each.
func benchValue(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"id":"o1","amount":12.5,"approved":true,"tags":{"a":"b"},"lines":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"qty":` + strconv.Itoa(i) + `,"note":"line number ` + strconv.Itoa(i) + `"}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkCheck checks a 60 KB value against Order's schema; next to
// it, BenchmarkDecode is what the guest's decode of the same value costs.
func BenchmarkCheck(b *testing.B) {
	s, v := Of(reflect.TypeFor[Order]()), benchValue(1000)
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if err := Check(s, v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	v := benchValue(1000)
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		var o Order
		if err := json.Unmarshal(v, &o); err != nil {
			b.Fatal(err)
		}
	}
}
