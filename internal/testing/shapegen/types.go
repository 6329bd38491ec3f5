// Package shapegen generates Go types and JSON values for the property
// tests of package shape: a schema's check must accept exactly the
// values the guest's decode accepts. Types come from reflect (ints of
// every width, floats, strings, []byte, slices, arrays, maps with every
// kind of key, pointers, interfaces, structs with json tags) and from the
// named types below (embedding, recursion, case folding, ",string",
// time.Time, json.Number, TextUnmarshaler). Values come from a schema
// (Values), so the same generator serves any SDK's schemas.
package shapegen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"
)

// Text is a TextUnmarshaler that takes every string, so that its schema
// (any string) is exact; one that refuses some strings cannot be checked
// without running its code.
type Text string

// UnmarshalText takes b as it is.
func (t *Text) UnmarshalText(b []byte) error { *t = Text(b); return nil }

// Level is a named integer, Name a named string, Bytes a named []byte.
type (
	Level int8
	Name  string
	Bytes []byte
	Byte  uint8
)

// Emb and Emb2 are embedded in structs: their X clash at one depth, so
// encoding/json drops X where both are embedded.
type Emb struct {
	X int
	Y string `json:"y"`
}

// Emb2: see Emb.
type Emb2 struct {
	X string
	Z bool
}

type embLow struct{ W int8 } // unexported, embedded by value: W is promoted

type embPtr struct{ P uint8 } // unexported, embedded by pointer: a value at "P" fails the decode

// Static struct types for what reflect.StructOf cannot make or rarely
// makes: embedding rules, recursion, case-folding clashes, ",string" on
// every scalar kind, interfaces, times, kinds Go cannot decode.
type (
	Tagged struct {
		Emb `json:"emb"`
		V   uint16
	}
	Both struct {
		Emb
		Emb2
		V int
	}
	Deep struct {
		Both
		X bool
	}
	Blocked struct {
		*embPtr
		Q int
	}
	Low struct {
		embLow
		*Emb
	}
	Node struct {
		V    int8
		Next *Node
		Kids []Node
		M    map[string]*Node
	}
	Fold struct {
		A int    `json:"ab"`
		B string `json:"AB"`
		C bool   `json:"aB"`
	}
	Kelvin struct {
		K int
		S string
	}
	Quoted struct {
		I int         `json:",string"`
		U *uint8      `json:",string"`
		F float32     `json:"f,string"`
		B bool        `json:",string"`
		S string      `json:",string"`
		N json.Number `json:",string"`
		T Text        `json:",string"`
		//lint:ignore SA5008 on purpose: the generator's cases include the misuse encoding/json ignores
		L []int `json:",string"` // not a scalar: ",string" does not apply
	}
	Iface struct {
		E error
		A any
		S fmt.Stringer
	}
	Times struct {
		T time.Time
		P *time.Time
		M map[time.Time]int
	}
	Funny struct {
		C chan int
		F func()
		X complex128
		M map[bool]int
		N map[float64]string
	}
)

// Statics are the named struct types above.
var Statics = []reflect.Type{
	reflect.TypeFor[Emb](), reflect.TypeFor[Tagged](), reflect.TypeFor[Both](), reflect.TypeFor[Deep](),
	reflect.TypeFor[Blocked](), reflect.TypeFor[Low](), reflect.TypeFor[Node](), reflect.TypeFor[Fold](),
	reflect.TypeFor[Kelvin](), reflect.TypeFor[Quoted](), reflect.TypeFor[Iface](), reflect.TypeFor[Times](),
	reflect.TypeFor[Funny](),
}

var leaves = []reflect.Type{
	reflect.TypeFor[bool](), reflect.TypeFor[int](), reflect.TypeFor[int8](), reflect.TypeFor[int16](),
	reflect.TypeFor[int32](), reflect.TypeFor[int64](), reflect.TypeFor[uint](), reflect.TypeFor[uint8](),
	reflect.TypeFor[uint16](), reflect.TypeFor[uint32](), reflect.TypeFor[uint64](), reflect.TypeFor[uintptr](),
	reflect.TypeFor[float32](), reflect.TypeFor[float64](), reflect.TypeFor[string](), reflect.TypeFor[[]byte](),
	reflect.TypeFor[json.Number](), reflect.TypeFor[time.Time](), reflect.TypeFor[any](), reflect.TypeFor[error](),
	reflect.TypeFor[json.RawMessage](), reflect.TypeFor[Text](), reflect.TypeFor[Level](), reflect.TypeFor[Name](),
	reflect.TypeFor[Bytes](), reflect.TypeFor[[]Byte](), reflect.TypeFor[*int](),
}

var mapKeys = []reflect.Type{
	reflect.TypeFor[string](), reflect.TypeFor[Name](), reflect.TypeFor[int](), reflect.TypeFor[int8](),
	reflect.TypeFor[int16](), reflect.TypeFor[uint8](), reflect.TypeFor[uint64](), reflect.TypeFor[uintptr](),
	reflect.TypeFor[Text](), reflect.TypeFor[time.Time](), reflect.TypeFor[bool](), reflect.TypeFor[float64](),
	reflect.TypeFor[Level](),
}

var embeddable = []reflect.Type{reflect.TypeFor[Emb](), reflect.TypeFor[Emb2](), reflect.TypeFor[*Emb](), reflect.TypeFor[Both]()}

// fieldNames are the Go names of generated fields; jsonNames the names
// their tags give, alike but for case, so that keys fold onto them.
var (
	fieldNames = []string{"A", "B", "N", "By", "ID", "K", "S", "Approved", "X", "Y", "Qty"}
	jsonNames  = []string{"a", "A", "by", "BY", "By", "n", "N", "k", "K", "s", "x", "approved", "qty", "ſ", "a b", "-"}
)

// Type returns a random type of at most depth levels of composition.
func Type(r *rand.Rand, depth int) reflect.Type {
	if depth <= 0 || r.IntN(4) == 0 {
		if r.IntN(8) == 0 {
			return Statics[r.IntN(len(Statics))]
		}
		return leaves[r.IntN(len(leaves))]
	}
	switch r.IntN(6) {
	case 0:
		return reflect.SliceOf(Type(r, depth-1))
	case 1:
		return reflect.ArrayOf(r.IntN(4), Type(r, depth-1))
	case 2:
		return reflect.MapOf(mapKeys[r.IntN(len(mapKeys))], Type(r, depth-1))
	case 3:
		return reflect.PointerTo(Type(r, depth-1))
	}
	return structType(r, depth)
}

// structType returns a random struct of up to five fields with random
// json tags, and sometimes an embedded struct.
func structType(r *rand.Rand, depth int) reflect.Type {
	var fs []reflect.StructField
	used := map[string]bool{}
	for range 1 + r.IntN(5) {
		if r.IntN(6) == 0 {
			t := embeddable[r.IntN(len(embeddable))]
			name := strings.TrimPrefix(t.String(), "*shapegen.")
			name = strings.TrimPrefix(name, "shapegen.")
			if !used[name] {
				used[name] = true
				fs = append(fs, reflect.StructField{Name: name, Type: t, Anonymous: true})
			}
			continue
		}
		name := fieldNames[r.IntN(len(fieldNames))]
		if used[name] {
			continue
		}
		used[name] = true
		fs = append(fs, reflect.StructField{Name: name, Type: Type(r, depth-1), Tag: reflect.StructTag(tag(r))})
	}
	return reflect.StructOf(fs)
}

// tag returns a random struct tag.
func tag(r *rand.Rand) string {
	name := ""
	if r.IntN(3) > 0 {
		name = jsonNames[r.IntN(len(jsonNames))]
	}
	switch r.IntN(10) {
	case 0:
		return ""
	case 1:
		return `json:"-"`
	case 2:
		return `json:"` + name + `,string"`
	case 3:
		return `json:"` + name + `,omitempty"`
	case 4:
		return `json:"a\\b"` // not a valid name: the field's own name is used
	}
	return `json:"` + name + `"`
}
