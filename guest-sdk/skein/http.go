package skein

import "github.com/skeinrun/skein/activity"

// HTTPActivity is the name of the host's built-in HTTP activity, which
// HTTP calls (abi/README.md, "The built-in HTTP activity").
const HTTPActivity = activity.HTTPActivity

// HTTPRequest is a request of the built-in HTTP activity
// (activity.HTTPRequest, the type the host decodes). Method defaults to
// GET; URL is http or https, to a host the host allows.
type HTTPRequest = activity.HTTPRequest

// HTTPResponse is the response the request got, of any status
// (activity.HTTPResponse). A header with several values has them joined
// with ", ".
type HTTPResponse = activity.HTTPResponse

// HTTP makes the request from the host, with no worker of its own: it is
// an ordinary durable activity call (of HTTPActivity), retried by the
// Retry option, recorded, and never made again once recorded. A response
// of any status is a success (check Status); a request the host's egress
// policy denies, a response over its size limit and a transport error or
// timeout fail the op (docs/activities.md).
func HTTP(ctx *Context, req HTTPRequest, opts ...Option) Future[HTTPResponse] {
	return Call[HTTPResponse](ctx, HTTPActivity, req, opts...)
}
