// Package client is the Go client of the HTTP API of `skein serve`
// (docs/api.md): deploy and list modules; start, list, inspect, wait for
// and cancel runs; settle external promises; manage schedules and
// webhooks; and serve activity tasks (the worker protocol that package
// worker is built on). It imports only the standard library: a program
// that talks to a server does not compile the engine.
//
// The types of this package are the API's JSON documents; package server
// answers with these same types. An error answer is an *Error with the
// HTTP status and the API's code and message:
//
//	c, err := client.New("http://127.0.0.1:7070", client.WithToken(os.Getenv("SKEIN_TOKEN")))
//	…
//	run, _, err := c.Start(ctx, client.StartRequest{Module: "orders", Input: json.RawMessage(`7`)})
//	if client.IsNotFound(err) { … deploy the module first … }
//	view, err := c.Wait(ctx, run.ID, client.WaitOptions{})
//
// Every call takes a context first and ends when it ends, returning the
// context's error.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client calls the API of one skein server. It is safe for concurrent use.
type Client struct {
	base      string // without a trailing slash
	token     string
	namespace string // sent as X-Skein-Namespace; empty: none
	userAgent string
	hc        *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as "Authorization: Bearer TOKEN" (skein serve
// --token) with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithNamespace sends ns as the X-Skein-Namespace header with every
// request: the namespace a root key acts in. Any other key acts in its
// own namespace, and naming another is refused (403).
func WithNamespace(ns string) Option { return func(c *Client) { c.namespace = ns } }

// WithHTTPClient sends the requests with hc instead of a client of its
// own. A timeout of hc bounds every call, long polls included.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithUserAgent sets the User-Agent header of the requests; default
// DefaultUserAgent.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// DefaultUserAgent is the User-Agent a Client sends unless told otherwise.
const DefaultUserAgent = "skein-go-client"

// maxAnswerBytes caps the answers read (a page of 1,000 runs with their
// inputs and results stays well below it).
const maxAnswerBytes = 256 << 20

// New returns a client of the server at baseURL, an http:// or https://
// URL such as "http://127.0.0.1:7070" (the API's paths are appended to
// it). Without WithHTTPClient it uses an http.Client without a timeout:
// the contexts of the calls bound them.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: server %q is not an http:// or https:// URL", baseURL)
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), userAgent: DefaultUserAgent}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	return c, nil
}

// BaseURL returns the server's URL the client was made with, without a
// trailing slash.
func (c *Client) BaseURL() string { return c.base }

// request is one call of the API.
type request struct {
	method, path string
	query        url.Values
	body         io.Reader
	contentType  string
	header       http.Header // more headers (a webhook delivery's)
}

// do sends rq and decodes a 2xx answer into out (unless nil; a *[]byte
// receives the answer as it is). It returns
// the status; an error answer is an *Error, a request that got no answer
// an *UnreachableError, and a request whose ctx ended returns ctx's error.
func (c *Client) do(ctx context.Context, rq request, out any) (int, error) {
	u := c.base + rq.path
	if len(rq.query) > 0 {
		u += "?" + rq.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, u, rq.body)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", rq.method, rq.path, err)
	}
	for k, vs := range rq.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	if rq.contentType == "application/wasm" {
		// A server that refuses the upload (too large, no token) answers
		// before the module is sent.
		req.Header.Set("Expect", "100-continue")
	}
	req.Header.Set("Accept", "application/json")
	c.identify(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, &UnreachableError{Server: c.base, Err: err}
	}
	defer func() { _ = resp.Body.Close() }() // read up to its limit: closing it has nothing to report
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		if ctx.Err() != nil {
			return resp.StatusCode, ctx.Err()
		}
		return resp.StatusCode, fmt.Errorf("%s %s: reading the answer: %w", rq.method, rq.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, answerError(rq, resp.StatusCode, data)
	}
	if raw, ok := out.(*[]byte); ok { // not JSON (GET /metrics)
		*raw = data
	} else if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: the answer is not what skein serve sends: %w", rq.method, rq.path, err)
		}
	}
	return resp.StatusCode, nil
}

// answerError is the *Error of an error answer with body data.
func answerError(rq request, status int, data []byte) *Error {
	var eb ErrorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
		return &Error{Status: status, Code: Code(eb.Error.Code), Message: eb.Error.Message}
	}
	return &Error{Status: status, Message: fmt.Sprintf("%s %s: %s", rq.method, rq.path, strings.TrimSpace(string(data)))}
}

// call sends in (unless nil) as a JSON body and decodes the answer into
// out (unless nil); it returns the answer's status.
func (c *Client) call(ctx context.Context, method, path string, in, out any) (int, error) {
	rq := request{method: method, path: path}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("%s %s: encoding the request: %w", method, path, err)
		}
		rq.body, rq.contentType = bytes.NewReader(b), "application/json"
	}
	return c.do(ctx, rq, out)
}

// get is call for a GET.
func (c *Client) get(ctx context.Context, path string, out any) error {
	_, err := c.call(ctx, http.MethodGet, path, nil, out)
	return err
}

// post is call for a POST with a JSON body.
func (c *Client) post(ctx context.Context, path string, in, out any) (int, error) {
	return c.call(ctx, http.MethodPost, path, in, out)
}

// noBody is the body of a POST that takes none: the API still wants it to
// be JSON.
var noBody = struct{}{}

// esc escapes a path segment (a run id, a name).
func esc(s string) string { return url.PathEscape(s) }

// Metrics returns GET /metrics: the server's metrics in the Prometheus
// text format (docs/ui.md lists them).
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	var text []byte
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/metrics"}, &text); err != nil {
		return nil, err
	}
	return text, nil
}

// identify sets the headers every request carries: the client's
// User-Agent and, with a token, its Authorization.
func (c *Client) identify(req *http.Request) {
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.namespace != "" {
		req.Header.Set("X-Skein-Namespace", c.namespace)
	}
}
