package skein

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/internal/shape"
	"github.com/skeinrun/skein/internal/testing/shapegen"
)

// shapeSeed is the seed of the property tests: SKEIN_SHAPE_SEED, else a
// fixed one, so that a failure reproduces.
func shapeSeed(t *testing.T) uint64 {
	if s := os.Getenv("SKEIN_SHAPE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SKEIN_SHAPE_SEED=%q: %v", s, err)
		}
		return n
	}
	return 32
}

// The host's check of a value against the schema the SDK gives for a
// type (shape.Check of shape.Of) accepts exactly the values the SDK's
// decode into that type accepts, for random types of every kind the
// derivation knows and random values along each schema's edges.
func TestShapeCheckMatchesDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(shapeSeed(t), 1))
	types := append([]reflect.Type(nil), shapegen.Statics...)
	for range 1500 {
		types = append(types, shapegen.Type(r, 3))
	}
	pairs, accepted := 0, 0
	for i, typ := range types {
		schema := shape.Of(typ)
		n := 40
		if i < len(shapegen.Statics) { // the named types hold the rare cases: more values
			n = 1000
		}
		for _, v := range shapegen.Values(r, schema, n) {
			checkErr := shape.Check(schema, v)
			decErr := json.Unmarshal(v, reflect.New(typ).Interface())
			if (checkErr == nil) != (decErr == nil) {
				t.Errorf("type %v, value %s:\n check:  %v\n decode: %v\n schema: %s", typ, v, checkErr, decErr, schema)
			}
			pairs++
			if checkErr == nil {
				accepted++
			}
		}
	}
	// Both verdicts must be common, or the generator tests little.
	if accepted < pairs/5 || accepted > pairs*4/5 {
		t.Errorf("%d of %d values accepted; want between a fifth and four fifths", accepted, pairs)
	}
	t.Logf("%d types, %d values, %d accepted", len(types), pairs, accepted)
}

// The SDK's own decode of op results and promise values (decode, with
// its fast paths for the types it knows) agrees with the check too.
func TestShapeCheckMatchesSDKDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(shapeSeed(t), 2))
	sdkAgrees[int](t, r)
	sdkAgrees[int64](t, r)
	sdkAgrees[int32](t, r)
	sdkAgrees[bool](t, r)
	sdkAgrees[string](t, r)
	sdkAgrees[struct{}](t, r)
	sdkAgrees[uint8](t, r)
	sdkAgrees[float32](t, r)
	sdkAgrees[[]int16](t, r)
	sdkAgrees[map[int8]string](t, r)
	sdkAgrees[shapegen.Kelvin](t, r)
	sdkAgrees[shapegen.Quoted](t, r)
}

func sdkAgrees[T any](t *testing.T, r *rand.Rand) {
	t.Helper()
	schema := schemaFor[T]()
	extra := [][]byte{[]byte("0"), []byte("-0"), []byte("01"), []byte("1.0"), []byte("9223372036854775808"),
		[]byte("-2147483649"), []byte(`"a\"b"`), []byte(`"é"`), []byte("{}"), []byte(`{"a":1}`), []byte("null"), []byte("[]")}
	for _, v := range append(shapegen.Values(r, schema, 400), extra...) {
		checkErr := shape.Check(schema, v)
		_, decErr := decode[T](abi.Outcome{Status: abi.StatusOK, Data: v})
		if (checkErr == nil) != (decErr == nil) {
			t.Errorf("%T, value %s:\n check:  %v\n decode: %v\n schema: %s", *new(T), v, checkErr, decErr, schema)
		}
	}
}
