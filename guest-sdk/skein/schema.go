package skein

import (
	"reflect"

	"github.com/skeinrun/skein/internal/shape"
)

// schemas caches the shape of each type a promise or a workflow input
// has (the guest is single-threaded: no lock).
var schemas = map[reflect.Type][]byte{}

// schemaFor returns the JSON Schema of T (shape.Of).
func schemaFor[T any]() []byte {
	t := reflect.TypeFor[T]()
	s, ok := schemas[t]
	if !ok {
		s = shape.Of(t)
		schemas[t] = s
	}
	return s
}
