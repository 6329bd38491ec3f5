package server

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.1 document of the API under /v1/
// (server/openapi.json), served at GET /v1/openapi.json. Its schemas are
// named after the types of wire.go. The tests keep it true to the code:
// server/openapi_test.go checks it against the routes registered with
// handle and the Go types of package client, and cmd/skein's
// TestOpenAPIWalkthrough validates real answers of a skein serve
// process against it.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPI: GET /v1/openapi.json, behind the token like every other GET.
func (a *api) openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc) // the client left: no one to tell
}
