package activity

// HTTPActivity is the name of the host's built-in HTTP activity
// (skein.HTTP in the Go guest SDK): its input is an HTTPRequest and its
// output an HTTPResponse, in JSON (abi/README.md, "The built-in HTTP
// activity"; docs/activities.md).
const HTTPActivity = "skein.http"

// HTTPRequest is the input of the HTTP activity. Method defaults to GET;
// URL is http or https, to a host the host's egress policy allows; Body
// is base64 in JSON.
type HTTPRequest struct {
	Method string            `json:"method,omitempty"`
	URL    string            `json:"url"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body,omitempty"`
}

// HTTPResponse is the output of the HTTP activity: the response the
// request got, of any status (a non-2xx status is a response, not an
// error). A header with several values has them joined with ", ".
type HTTPResponse struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body,omitempty"`
}
