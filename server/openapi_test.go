package server

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/internal/testing/openapitest"
)

// The tests that keep server/openapi.json true to the code: its
// operations are the routes handle registered, its schemas the Go types
// of the documents, and it is served at GET /v1/openapi.json. The
// answers of a real skein serve are validated against it in cmd/skein
// (TestOpenAPIWalkthrough).

// notInDocument are the routes outside /v1/, which the document leaves
// out: the metrics and the web UI's files.
var notInDocument = []string{"GET /metrics", "GET /{$}", "GET /ui/"}

func loadOpenAPI(t *testing.T) *openapitest.Doc {
	t.Helper()
	d, err := openapitest.Load(openAPIDoc)
	if err != nil {
		t.Fatalf("server/openapi.json: %v", err)
	}
	return d
}

// TestOpenAPIRoutes: every route the server registers under /v1/ is an
// operation of the document, and every operation is a registered route.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	a, _ := newAPI(newTestAPI(t, Options{}).hs, Options{})
	var registered []string
	for _, p := range slices.Sorted(maps.Keys(a.routes)) {
		if slices.Contains(notInDocument, p) {
			continue
		}
		if !strings.Contains(p, " /v1/") {
			t.Errorf("route %q is outside /v1/ and not one of %q: add it to server/openapi.json or to notInDocument", p, notInDocument)
			continue
		}
		registered = append(registered, p)
	}
	documented := d.Operations()
	for _, p := range registered {
		if !slices.Contains(documented, p) {
			t.Errorf("route %q is registered (handle) but not in server/openapi.json", p)
		}
	}
	for _, op := range documented {
		if !slices.Contains(registered, op) {
			t.Errorf("operation %q of server/openapi.json is not a registered route", op)
		}
	}
	if len(registered) < 28 {
		t.Errorf("only %d routes under /v1/ were found: %q", len(registered), registered)
	}
}

// TestOpenAPIServed: GET /v1/openapi.json answers the document, behind
// the token like every other GET, and both answers are the document's.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	ta := newTestAPI(t, Options{Token: "tok"})
	for _, c := range []struct {
		hdr    []string
		status int
	}{{nil, 401}, {[]string{"Authorization", "Bearer tok"}, 200}} {
		req := newRequest("GET", "/v1/openapi.json", nil)
		for i := 0; i+1 < len(c.hdr); i += 2 {
			req.Header.Set(c.hdr[i], c.hdr[i+1])
		}
		rec := httptest.NewRecorder()
		ta.h.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Fatalf("GET /v1/openapi.json with %q: %d %s; want %d", c.hdr, rec.Code, rec.Body, c.status)
		}
		x := openapitest.Exchange{Method: "GET", URL: req.URL, ReqHeader: req.Header, Status: rec.Code,
			RespHeader: rec.Header(), RespBody: rec.Body.Bytes()}
		if _, err := d.Check(x); err != nil {
			t.Error(err)
		}
		if c.status == 200 && !bytes.Equal(rec.Body.Bytes(), openAPIDoc) {
			t.Errorf("GET /v1/openapi.json answers %d bytes that are not server/openapi.json", rec.Body.Len())
		}
	}
}

// wireTypes are the Go types of the documents, by the name of their
// schema in server/openapi.json (the names of wire.go and package client).
var wireTypes = map[string]any{
	"ErrorBody": ErrorBody{}, "ErrorDetail": ErrorDetail{},
	"Module": Module{}, "ModuleList": ModuleList{},
	"Run": Run{}, "RunList": RunList{}, "StartRequest": StartRequest{}, "CancelRequest": CancelRequest{},
	"ResetRequest":   ResetRequest{},
	"ResolveRequest": ResolveRequest{}, "Resolved": Resolved{},
	"PauseRequest": PauseRequest{}, "ResumeRequest": ResumeRequest{}, "Pause": client.Pause{},
	"OutcomeView": client.OutcomeView{}, "Outcome": client.Outcome{}, "Waiting": client.Waiting{},
	"WaitPromise": client.WaitPromise{}, "WaitTimer": client.WaitTimer{}, "WaitChild": client.WaitChild{},
	"WaitActivity": client.WaitActivity{}, "WaitTask": client.WaitTask{},
	"RunOps": RunOps{}, "Op": Op{}, "Try": Try{}, "Drop": Drop{},
	"LeaseList": LeaseList{}, "Lease": Lease{}, "TaskList": TaskList{}, "ActivityTask": ActivityTask{},
	"PruneRequest": PruneRequest{}, "PruneResult": PruneResult{},
	"ClaimRequest": client.ClaimRequest{}, "ClaimResponse": client.ClaimResponse{}, "ClaimedTask": client.ClaimedTask{},
	"HeartbeatRequest": client.HeartbeatRequest{}, "HeartbeatResponse": client.HeartbeatResponse{},
	"CompleteRequest": client.CompleteRequest{}, "FailRequest": client.FailRequest{}, "TaskEnded": client.TaskEnded{},
	"ScheduleRequest": ScheduleRequest{}, "Schedule": Schedule{}, "ScheduleList": ScheduleList{},
	"HookRequest": HookRequest{}, "Hook": Hook{}, "HookList": HookList{},
	"BatchRequest": client.BatchRequest{}, "Batch": client.Batch{}, "BatchError": client.BatchError{},
	"BatchList": client.BatchList{}, "DryRun": client.DryRun{},
	"AttributeRequest": client.AttributeRequest{}, "Attribute": client.Attribute{}, "AttributeList": client.AttributeList{},
	"NamespaceRequest": client.NamespaceRequest{}, "NamespaceUpdate": client.NamespaceUpdate{},
	"Namespace": client.Namespace{}, "NamespaceList": client.NamespaceList{},
	"KeyRequest": client.KeyRequest{}, "Key": client.Key{}, "KeySecret": client.KeySecret{}, "KeyList": client.KeyList{},
}

// scalarSchemas are the schemas of the document that are not documents
// of their own (an enum of strings).
var scalarSchemas = []string{"RunStatus"}

// TestOpenAPISchemasMatchGoTypes: each schema of the components has the
// JSON fields of its Go type, no more and no fewer, each of a matching
// type, and allows no other (additionalProperties false); an answer's
// schema requires exactly the fields the Go type always writes (those
// without omitempty). So a field added to a type fails here even when
// no answer of the walkthrough holds it.
func TestOpenAPISchemasMatchGoTypes(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		if _, ok := wireTypes[name]; !ok && !slices.Contains(scalarSchemas, name) {
			t.Errorf("schema %s of server/openapi.json has no Go type in wireTypes", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(wireTypes)) {
		s, ok := schemas[name]
		if !ok {
			t.Errorf("Go type %s has no schema %s in server/openapi.json", reflect.TypeOf(wireTypes[name]), name)
			continue
		}
		checkSchemaFields(t, schemas, name, s, reflect.TypeOf(wireTypes[name]))
	}
}

// checkSchemaFields compares the object schema s with the struct type typ.
func checkSchemaFields(t *testing.T, schemas map[string]map[string]any, name string, s map[string]any, typ reflect.Type) {
	t.Helper()
	if s["additionalProperties"] != false {
		t.Errorf("schema %s: additionalProperties is not false: a field the code adds would pass", name)
	}
	props, _ := s["properties"].(map[string]any)
	fields := jsonFields(typ)
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		p, ok := props[f].(map[string]any)
		if !ok {
			t.Errorf("schema %s lacks property %q of %s", name, f, typ)
			continue
		}
		if msg := typeMismatch(schemas, p, fields[f].typ); msg != "" {
			t.Errorf("schema %s, property %q: %s", name, f, msg)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(props)) {
		if _, ok := fields[p]; !ok {
			t.Errorf("schema %s has property %q, which %s does not", name, p, typ)
		}
	}
	if strings.HasSuffix(name, "Request") { // what a request must hold is the handler's rule
		return
	}
	var required []string
	for _, r := range s["required"].([]any) {
		required = append(required, r.(string))
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if always := !fields[f].omitempty; always != slices.Contains(required, f) {
			t.Errorf("schema %s: property %q is required: %v, but %s always writes it: %v", name, f, !always, typ, always)
		}
	}
}

// jsonField is a field as encoding/json writes it.
type jsonField struct {
	typ       reflect.Type
	omitempty bool
}

// jsonFields returns the JSON fields of a struct type, those of
// embedded structs included.
func jsonFields(typ reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			maps.Copy(out, jsonFields(f.Type))
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = jsonField{typ: f.Type, omitempty: strings.Contains(opts, "omitempty")}
	}
	return out
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// typeMismatch says how property schema p does not fit Go type typ, ""
// when it does: a struct is a $ref to the schema of its name, a
// json.RawMessage any JSON (no type), a time an RFC 3339 date-time, a
// pointer its element or null.
func typeMismatch(schemas map[string]map[string]any, p map[string]any, typ reflect.Type) string {
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	ref, _ := p["$ref"].(string)
	refName := strings.TrimPrefix(ref, "#/components/schemas/")
	if typ == rawType {
		if p["type"] != nil || ref != "" {
			return "any JSON (json.RawMessage) must have no type"
		}
		return ""
	}
	if typ.Kind() == reflect.Struct && typ != timeType {
		if refName != typ.Name() {
			return "want a $ref to #/components/schemas/" + typ.Name() + ", have " + ref
		}
		return ""
	}
	if ref != "" {
		p = schemas[refName]
	}
	var want string
	switch typ.Kind() {
	case reflect.String:
		want = "string"
	case reflect.Bool:
		want = "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "integer"
	case reflect.Float32, reflect.Float64:
		want = "number"
	case reflect.Map:
		want = "object"
	case reflect.Slice:
		items, _ := p["items"].(map[string]any)
		if p["type"] != "array" || items == nil {
			return "want an array with items"
		}
		return typeMismatch(schemas, items, typ.Elem())
	case reflect.Struct: // time.Time
		if p["format"] != "date-time" {
			return "want format date-time for a time.Time"
		}
		want = "string"
	}
	switch ty := p["type"].(type) {
	case string:
		if ty == want {
			return ""
		}
	case []any:
		if slices.Contains(ty, any(want)) {
			return ""
		}
	}
	return "want type " + want + " for Go type " + typ.String() + ", have " + jsonText(p["type"])
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
