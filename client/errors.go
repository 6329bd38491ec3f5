package client

import (
	"errors"
	"fmt"
)

// Code is an error code of the API: the "code" of an error answer
// (docs/api.md, "Errors"). A Code is an error so that errors.Is matches
// an *Error against it:
//
//	if errors.Is(err, client.CodeConflict) { … }
type Code string

// Error returns the code itself.
func (c Code) Error() string { return string(c) }

// The error codes of the API, with the HTTP status each comes with.
const (
	// CodeBadRequest (400): the request is malformed or a field is invalid.
	CodeBadRequest Code = "bad_request"
	// CodeInvalidModule (400): the upload is not a module skein can run.
	CodeInvalidModule Code = "invalid_module"
	// CodeUnauthorized (401): the token is missing or wrong, or a webhook
	// delivery's signature does not verify.
	CodeUnauthorized Code = "unauthorized"
	// CodeForbidden (403): a browser request from a page of another origin.
	CodeForbidden Code = "forbidden"
	// CodeNotFound (404): no such module, run, promise, schedule, hook or
	// endpoint.
	CodeNotFound Code = "not_found"
	// CodeMethodNotAllowed (405): the endpoint takes another method.
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeRequestTimeout (408): a request body that did not arrive in time.
	CodeRequestTimeout Code = "request_timeout"
	// CodeConflict (409): a name taken, a run id reused with another
	// request, a promise settled with another outcome, a cancel of an
	// ended run, an attempt that is no longer the worker's.
	CodeConflict Code = "conflict"
	// CodeTooLarge (413): a module or request body over its limit.
	CodeTooLarge Code = "too_large"
	// CodeUnsupportedMediaType (415): a write whose Content-Type is not
	// the endpoint's.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// CodeMisdirected (421): without a token, a Host that is not the
	// server's.
	CodeMisdirected Code = "misdirected_request"
	// CodeModuleLimit (422): a module over a structure limit or the
	// compile deadline.
	CodeModuleLimit Code = "module_limit"
	// CodeInternal (500): anything else; the server logged it.
	CodeInternal Code = "internal"
	// CodeUnavailable (503): the database cannot be reached; nothing was
	// written; try again.
	CodeUnavailable Code = "unavailable"
	// CodeInsufficientStorage (507): the database is full; nothing was
	// written.
	CodeInsufficientStorage Code = "insufficient_storage"
	// CodeQuotaExceeded (507): storing the module would pass the quota
	// on stored modules.
	CodeQuotaExceeded Code = "quota_exceeded"
)

// ErrorBody is the body of every error answer:
// {"error": {"code": "not_found", "message": "no run \"r1\""}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"` // what went wrong
}

// ErrorDetail is the error of an ErrorBody.
type ErrorDetail struct {
	Code    string `json:"code"`    // one of the Code values
	Message string `json:"message"` // for people: programs branch on the code
}

// Error is an error answer of the server: its HTTP status and the API's
// code and message. Match it with errors.As, or its code with errors.Is
// (errors.Is(err, client.CodeNotFound)) or IsNotFound and IsConflict.
type Error struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is the API's error code; empty when the answer did not have
	// the API's error body (a proxy's page, say).
	Code Code
	// Message is the API's message; for an answer without the API's error
	// body, the request and what the answer said.
	Message string
}

// Error is the message followed by the status and the code:
// `no run "r1" (HTTP 404 not_found)`.
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d %s)", e.Message, e.Status, e.Code)
}

// Is reports whether target is e's Code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && e.Code != "" && c == e.Code
}

// IsNotFound reports whether err is an answer with code not_found: no such
// module, run, promise, schedule, hook or task.
func IsNotFound(err error) bool { return errors.Is(err, CodeNotFound) }

// IsConflict reports whether err is an answer with code conflict (HTTP
// 409): see CodeConflict.
func IsConflict(err error) bool { return errors.Is(err, CodeConflict) }

// UnreachableError is the error of a request that got no answer: the
// server could not be reached, or the connection failed before the
// answer came. A request whose context ended returns the context's error
// instead.
type UnreachableError struct {
	// Server is the client's base URL.
	Server string
	// Err is net/http's error, a *url.Error.
	Err error
}

// Error says which server could not be reached, and why.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the skein server at %s: %v", e.Server, e.Err)
}

// Unwrap returns Err.
func (e *UnreachableError) Unwrap() error { return e.Err }
