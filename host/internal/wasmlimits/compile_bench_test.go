package wasmlimits_test

import (
	"fmt"
	"testing"

	"github.com/skeinrun/skein/host/internal/wasmlimits"
	"github.com/skeinrun/skein/internal/testing/wasmtest"
)

// BenchmarkCompile measures how long the engine (wazero, behind
// host/internal/engine) takes to compile a generated
// module as one dimension of its shape grows (docs/limits.md lists the
// figures and the limits chosen from them). Run it with
//
//	go test -run - -bench Compile -benchtime 1x ./host/internal/wasmlimits/
func BenchmarkCompile(b *testing.B) {
	cases := []struct {
		dim    string
		values []int
		shape  func(int) wasmtest.Shape
	}{
		{"nesting", []int{1000, 2000, 4000, 8000, 16000}, func(n int) wasmtest.Shape { return wasmtest.Shape{Nesting: n} }},
		{"function-bytes", []int{100_000, 200_000, 400_000, 800_000, 1_600_000}, func(n int) wasmtest.Shape {
			return wasmtest.Shape{Functions: 1, BodyOps: n / 6, Locals: 16}
		}},
		{"branches", []int{2000, 4000, 8000, 16000}, func(n int) wasmtest.Shape { return wasmtest.Shape{Functions: 1, Branches: n} }},
		{"locals", []int{1000, 10_000, 50_000, 100_000}, func(n int) wasmtest.Shape {
			return wasmtest.Shape{Functions: 1, BodyOps: n, Locals: n}
		}},
		{"functions", []int{10_000, 50_000, 100_000, 200_000}, func(n int) wasmtest.Shape { return wasmtest.Shape{Functions: n} }},
		{"types", []int{10_000, 50_000, 100_000}, func(n int) wasmtest.Shape { return wasmtest.Shape{Types: n, TypeValues: 4} }},
		{"type-values", []int{1000, 10_000, 50_000}, func(n int) wasmtest.Shape { return wasmtest.Shape{Types: 1, TypeValues: n} }},
		{"globals", []int{10_000, 100_000, 1_000_000}, func(n int) wasmtest.Shape { return wasmtest.Shape{Globals: n} }},
		{"data-segments", []int{100_000, 1_000_000}, func(n int) wasmtest.Shape { return wasmtest.Shape{DataSegments: n} }},
		{"element-segments", []int{100_000, 1_000_000}, func(n int) wasmtest.Shape { return wasmtest.Shape{ElementSegments: n} }},
	}
	for _, c := range cases {
		for _, v := range c.values {
			wasm := wasmtest.Shaped(c.shape(v))
			b.Run(fmt.Sprintf("%s=%d", c.dim, v), func(b *testing.B) {
				for b.Loop() {
					if _, err := wasmlimits.Measure(wasm); err != nil {
						b.Fatal(err)
					}
					if err := engineCompile(wasm); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(wasm)), "module-bytes")
			})
		}
	}
}
