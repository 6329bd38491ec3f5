package openapitest

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// tiny is a document of two operations, in the style of server/openapi.json.
const tiny = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/v1/things/{id}": {
      "parameters": [{"$ref": "#/components/parameters/ID"}],
      "get": {
        "operationId": "getThing",
        "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}}],
        "responses": {
          "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
          "401": {"description": "no", "headers": {"WWW-Authenticate": {"required": true, "schema": {"type": "string"}}},
                  "content": {"application/json": {"schema": {"type": "object"}}}}
        }
      }
    },
    "/v1/things/all": {
      "delete": {"operationId": "deleteAll", "responses": {"204": {"description": "gone"}}}
    }
  },
  "components": {
    "parameters": {"ID": {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}},
    "schemas": {
      "Thing": {"type": "object", "properties": {"id": {"type": "string"}, "at": {"type": "string", "format": "date-time"}},
                "required": ["id"], "additionalProperties": false}
    }
  }
}`

func exchange(method, target string, status int, body string, hdr ...string) Exchange {
	u, _ := url.Parse(target)
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return Exchange{Method: method, URL: u, ReqHeader: http.Header{}, Status: status, RespHeader: h, RespBody: []byte(body)}
}

// TestCheck: answers and requests that differ from the document are
// reported, naming what differs; those that fit pass.
func TestCheck(t *testing.T) {
	t.Parallel()
	d, err := Load([]byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.Operations(), ","); got != "DELETE /v1/things/all,GET /v1/things/{id}" {
		t.Errorf("operations %s", got)
	}
	for _, c := range []struct {
		x    Exchange
		want string // "" when it fits
	}{
		{exchange("GET", "/v1/things/a1?limit=5", 200, `{"id":"a1","at":"2026-12-03T11:00:00.5Z"}`), ""},
		{exchange("GET", "/v1/things/a1", 200, `{"id":"a1","color":"red"}`), "additional properties 'color' not allowed"},
		{exchange("GET", "/v1/things/a1", 200, `{"at":"2026-12-03T11:00:00Z"}`), "missing property 'id'"},
		{exchange("GET", "/v1/things/a1", 200, `{"id":"a1","at":"yesterday"}`), "is not valid date-time"},
		{exchange("GET", "/v1/things/a1?limit=0", 200, `{"id":"a1"}`), `query parameter limit "0"`},
		{exchange("GET", "/v1/things/a1?color=red", 200, `{"id":"a1"}`), `query parameter "color" is not in the document`},
		{exchange("GET", "/v1/things/a1", 404, `{}`), "status 404 is not one of the operation's responses (200, 401)"},
		{exchange("GET", "/v1/things/a1", 401, `{}`), "lacks the required header WWW-Authenticate"},
		{exchange("GET", "/v1/things/a1", 401, `{}`, "WWW-Authenticate", "Bearer"), ""},
		{exchange("GET", "/v1/things/a1", 200, `{"id":"a1"}`, "Content-Type", "text/plain"), `answer Content-Type "text/plain"`},
		{exchange("PUT", "/v1/things/a1", 200, `{}`), "the document has no operation PUT /v1/things/a1"},
		{exchange("DELETE", "/v1/things/all", 204, ``), ""},
		{exchange("DELETE", "/v1/things/all", 204, `{}`), "the answer has a body"},
	} {
		op, err := d.Check(c.x)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.x, err)
		case c.want != "" && err == nil:
			t.Errorf("%v (%s): passed; want an error with %q", c.x, op, c.want)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%v: error %q lacks %q", c.x, err, c.want)
		}
	}
	// A literal segment wins over a parameter.
	if op, err := d.Match("DELETE", "/v1/things/all"); err != nil || op != "DELETE /v1/things/all" {
		t.Errorf("Match: %q, %v", op, err)
	}
}

// TestLoadRefusesBadDocuments: a dangling $ref, a schema that does not
// compile, an undeclared path parameter, a duplicate operationId and
// another version are each reported.
func TestLoadRefusesBadDocuments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ old, new, want string }{
		{`"#/components/schemas/Thing"`, `"#/components/schemas/Thin"`, `$ref "#/components/schemas/Thin": no "Thin"`},
		{`"minimum": 1`, `"minimum": "one"`, "does not compile"},
		{`"parameters": [{"$ref": "#/components/parameters/ID"}],`, ``, "the path parameter {id} is not declared"},
		{`"operationId": "deleteAll"`, `"operationId": "getThing"`, `the same operationId "getThing"`},
		{`"openapi": "3.1.0"`, `"openapi": "3.0.3"`, `version "3.0.3", want 3.1.x`},
		{`"openapi": "3.1.0",`, ``, `version null, want 3.1.x`},
	} {
		doc := strings.Replace(tiny, c.old, c.new, 1)
		if doc == tiny {
			t.Fatalf("%q is not in the document", c.old)
		}
		_, err := Load([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: error %v; want one with %q", c.old, c.new, err, c.want)
		}
	}
}
