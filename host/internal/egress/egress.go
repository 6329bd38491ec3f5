// Package egress makes the HTTP requests of skein's built-in HTTP activity
// under a policy that denies by default: a request may reach only the
// hosts the operator allowed, never a special-purpose address (link-local,
// cloud metadata, documentation, reserved, or a form that embeds such an
// IPv4 address: special.go) unless that address itself was allowed, never
// the process's own API (Policy.Own), follows redirects only to allowed
// hosts, and is bounded in time and in response size. The address
// a host name resolves to is checked when the connection is dialed, so a
// DNS answer that changes between the check and the dial cannot get
// around the policy.
package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/skeinrun/skein/activity"
)

// Defaults of Policy.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 10 << 20
	maxRedirects            = 10
)

// ErrBadRequest is wrapped by the errors of a request that cannot be
// made at all (a URL or method that does not parse): trying again cannot
// help.
var ErrBadRequest = errors.New("bad request")

// Policy says which hosts requests may reach and bounds each request.
type Policy struct {
	// Allow lists the hosts requests may reach: "host" (any port) or
	// "host:port"; an IPv6 address with a port is written "[::1]:8080".
	// Names are matched case-insensitively. Empty: nothing is allowed.
	Allow []string
	// Timeout bounds a whole request, redirects and body included.
	// Default DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes bounds a response as it is returned: the names
	// and values of its headers and its body, together. Default
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// AllowSetting says where Allow is set, for the errors of requests it
	// denies (the host: "Config.HTTPAllow; --allow-http"). Default
	// "Policy.Allow".
	AllowSetting string
	// Resolver resolves host names; nil means net.DefaultResolver. Tests
	// set it to give names addresses without a DNS server.
	Resolver Resolver
	// Own lists the addresses and ports of this process's own API:
	// requests never reach them, whatever Allow names. An unspecified
	// address (0.0.0.0, ::) stands for every address of this machine at
	// its port.
	Own []netip.AddrPort
	// OwnSetting says what Own is, for the errors of requests it denies.
	// Default "an address and port of this process's API (Policy.Own)".
	OwnSetting string
}

// Resolver resolves a host name to IP addresses.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Client makes requests under one policy. It is safe for concurrent use.
type Client struct {
	p     Policy
	allow []allowEntry
	http  *http.Client
}

// allowEntry is one parsed entry of Policy.Allow.
type allowEntry struct {
	host string // lower case, without brackets
	port string // "" for any port
}

// New checks the policy and returns a client for it.
func New(p Policy) (*Client, error) {
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	if p.MaxResponseBytes <= 0 {
		p.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if p.Resolver == nil {
		p.Resolver = net.DefaultResolver
	}
	if p.AllowSetting == "" {
		p.AllowSetting = "Policy.Allow"
	}
	if p.OwnSetting == "" {
		p.OwnSetting = "an address and port of this process's API (Policy.Own)"
	}
	c := &Client{p: p}
	for _, a := range p.Allow {
		e, err := parseAllow(a)
		if err != nil {
			return nil, err
		}
		c.allow = append(c.allow, e)
	}
	dialer := &net.Dialer{Timeout: p.Timeout}
	tr := &http.Transport{
		Proxy:               nil, // never a proxy from the environment
		DialContext:         c.dialer(dialer),
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		// The headers count against the response's bound (Do): more
		// than all of it on the wire stops the read there.
		MaxResponseHeaderBytes: p.MaxResponseBytes,
		// The request's context bounds the whole request (Do): the
		// transport's own timeouts are not set, so one error names the limit.
	}
	c.http = &http.Client{Transport: tr, CheckRedirect: c.checkRedirect}
	return c, nil
}

// parseAllow parses one entry of Policy.Allow.
func parseAllow(a string) (allowEntry, error) {
	s := strings.ToLower(strings.TrimSpace(a))
	if s == "" || strings.ContainsAny(s, "/?#@ ") {
		return allowEntry{}, fmt.Errorf("egress allow entry %q: want HOST or HOST:PORT (no scheme, path or user)", a)
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		if h == "" || p == "" {
			return allowEntry{}, fmt.Errorf("egress allow entry %q: want HOST or HOST:PORT", a)
		}
		return allowEntry{host: h, port: p}, nil
	}
	return allowEntry{host: strings.Trim(s, "[]")}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Do makes the request. Errors name the rule that stopped it.
func (c *Client) Do(ctx context.Context, r activity.HTTPRequest) (activity.HTTPResponse, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return activity.HTTPResponse{}, fmt.Errorf("HTTP request: bad URL %q: %w: %w", r.URL, ErrBadRequest, err)
	}
	if err := c.checkURL(u); err != nil {
		return activity.HTTPResponse{}, err
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	rctx, cancel := context.WithTimeout(ctx, c.p.Timeout)
	defer cancel()
	trace := &redirectTrace{}
	req, err := http.NewRequestWithContext(context.WithValue(rctx, redirectKey{}, trace), method, u.String(), bytes.NewReader(r.Body))
	if err != nil {
		return activity.HTTPResponse{}, fmt.Errorf("HTTP request %s %s: %w: %w", method, r.URL, ErrBadRequest, err)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return activity.HTTPResponse{}, c.requestError(ctx, rctx, method, r.URL, trace, err)
	}
	defer func() { _ = resp.Body.Close() }() // read to its end or its limit: closing it has nothing to report
	out, err := c.read(resp, method, r.URL)
	if err != nil {
		var le *LimitError
		if !errors.As(err, &le) {
			err = c.requestError(ctx, rctx, method, r.URL, trace, err)
		}
		return activity.HTTPResponse{}, err
	}
	return out, nil
}

// read reads a response within MaxResponseBytes: its headers' names and
// values first, then its body in what remains.
func (c *Client) read(resp *http.Response, method, rawURL string) (activity.HTTPResponse, error) {
	out := activity.HTTPResponse{Status: resp.StatusCode}
	var headerBytes int64
	if len(resp.Header) > 0 {
		out.Header = make(map[string]string, len(resp.Header))
		for k, vs := range resp.Header {
			v := strings.Join(vs, ", ")
			out.Header[k] = v
			headerBytes += int64(len(k) + len(v))
		}
	}
	if headerBytes > c.p.MaxResponseBytes {
		return activity.HTTPResponse{}, c.headersError(method, rawURL)
	}
	room := c.p.MaxResponseBytes - headerBytes
	body, err := io.ReadAll(io.LimitReader(resp.Body, room+1))
	if err != nil {
		return activity.HTTPResponse{}, err
	}
	if int64(len(body)) > room {
		return activity.HTTPResponse{}, &LimitError{What: fmt.Sprintf("the response of %s %s is larger than %d bytes", method, rawURL, c.p.MaxResponseBytes),
			Field: "MaxResponseBytes", Value: fmt.Sprintf("%d bytes", c.p.MaxResponseBytes)}
	}
	out.Body = body
	return out, nil
}

// headersError is the error of a response whose headers alone go over
// MaxResponseBytes.
func (c *Client) headersError(method, rawURL string) error {
	return &LimitError{What: fmt.Sprintf("the response headers of %s %s are larger than %d bytes", method, rawURL, c.p.MaxResponseBytes),
		Field: "MaxResponseBytes", Value: fmt.Sprintf("%d bytes", c.p.MaxResponseBytes)}
}

// headerOverflow are the texts of the transport's errors for headers
// over MaxResponseHeaderBytes (HTTP/1 and HTTP/2); net/http exports no
// error value for them.
var headerOverflow = []string{"server response headers exceeded", "response header list larger than"}

// redirectTrace remembers the last URL that redirected a request, so a
// denial at the dial names the redirect.
type redirectTrace struct{ from string }

type redirectKey struct{}

// requestError turns a failed request into an error that names the rule
// when the policy stopped it.
func (c *Client) requestError(parent, rctx context.Context, method, rawURL string, trace *redirectTrace, err error) error {
	var denied *DeniedError
	if errors.As(err, &denied) {
		if denied.Redirect == "" {
			denied.Redirect = trace.from
		}
		return denied
	}
	for _, s := range headerOverflow {
		if strings.Contains(err.Error(), s) {
			return c.headersError(method, rawURL)
		}
	}
	if parent.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return &LimitError{What: fmt.Sprintf("%s %s did not complete within %s", method, rawURL, c.p.Timeout),
			Field: "Timeout", Value: c.p.Timeout.String()}
	}
	return fmt.Errorf("HTTP request %s %s: %w", method, rawURL, err)
}

// checkRedirect applies the policy to every redirect.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("HTTP request: stopped after %d redirects", maxRedirects)
	}
	from := via[len(via)-1].URL.String()
	if err := c.checkURL(req.URL); err != nil {
		var denied *DeniedError
		if errors.As(err, &denied) {
			denied.Redirect = from
		}
		return err
	}
	if t, ok := req.Context().Value(redirectKey{}).(*redirectTrace); ok {
		t.from = from
	}
	return nil
}
