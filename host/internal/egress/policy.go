package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// DeniedError reports a request the policy does not allow.
type DeniedError struct {
	Host     string // host or host:port as requested
	Reason   string
	Redirect string // the URL that redirected here, if any
}

func (e *DeniedError) Error() string {
	msg := fmt.Sprintf("HTTP request to %s denied: %s", e.Host, e.Reason)
	if e.Redirect != "" {
		msg = fmt.Sprintf("HTTP redirect from %s to %s denied: %s", e.Redirect, e.Host, e.Reason)
	}
	return msg
}

// LimitError reports a request that went over a bound of the policy.
// Field names the Policy field ("Timeout" or "MaxResponseBytes"): the
// host turns it into a host.LimitError that names its own Config field and
// where that is set.
type LimitError struct {
	What  string // what went over the bound
	Field string // the Policy field
	Value string // the bound, e.g. "300ms"
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s (limit Policy.%s = %s)", e.What, e.Field, e.Value)
}

// notAllowed is the reason for a host missing from the allow list.
func (c *Client) notAllowed() string {
	return fmt.Sprintf("the host is not in the egress allow list (%s)", c.p.AllowSetting)
}

// checkURL checks the scheme and the host of a URL against the allow list.
func (c *Client) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return &DeniedError{Host: u.Host, Reason: fmt.Sprintf("scheme %q (only http and https)", u.Scheme)}
	}
	if u.User != nil {
		return &DeniedError{Host: u.Host, Reason: "user information in the URL"}
	}
	host, port := hostPort(u)
	if host == "" {
		return &DeniedError{Host: u.Host, Reason: "no host in the URL"}
	}
	if !c.allowed(host, port) {
		return &DeniedError{Host: net.JoinHostPort(host, port), Reason: c.notAllowed()}
	}
	// An address is checked now, so that a redirect's denial names the
	// redirect; a name's addresses are checked when dialing.
	if a, err := netip.ParseAddr(host); err == nil {
		if p, err := strconv.ParseUint(port, 10, 16); err == nil {
			return c.checkAddr(net.JoinHostPort(host, port), netip.AddrPortFrom(a, uint16(p)))
		}
	}
	return nil
}

// hostPort returns a URL's host in lower case and its port, defaulted by
// scheme.
func hostPort(u *url.URL) (string, string) {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return host, port
}

// allowed reports whether the allow list names host (with port).
func (c *Client) allowed(host, port string) bool {
	for _, e := range c.allow {
		if e.host == host && (e.port == "" || e.port == port) {
			return true
		}
	}
	return false
}

// namedAddr reports whether the allow list names addr itself (as an IP
// literal), which is what lets a request reach a special address.
func (c *Client) namedAddr(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	for _, e := range c.allow {
		if a, err := netip.ParseAddr(e.host); err == nil && a.Unmap().WithZone("") == addr {
			return true
		}
	}
	return false
}

// checkAddr refuses an address and port a request to host must not
// reach: one of Policy.Own whatever the allow list says, a special
// address (special.go) unless the allow list names it.
func (c *Client) checkAddr(host string, ap netip.AddrPort) error {
	addr := ap.Addr().Unmap()
	if c.own(addr, ap.Port()) {
		return &DeniedError{Host: host, Reason: fmt.Sprintf("it resolves to %s, %s; requests never reach it, whatever the egress allow list names",
			netip.AddrPortFrom(addr, ap.Port()), c.p.OwnSetting)}
	}
	k, what := classify(addr)
	if k != special || c.namedAddr(addr) {
		return nil
	}
	return &DeniedError{Host: host, Reason: fmt.Sprintf("it resolves to %s, %s; name the address itself in the egress allow list (%s) to allow it", addr, what, c.p.AllowSetting)}
}

// interfaceAddrs lists this machine's addresses (tests replace it).
var interfaceAddrs = net.InterfaceAddrs

// own reports whether addr and port reach one of Policy.Own: the same
// address and port, or, for an unspecified one, any address of this
// machine at that port. Connecting to an unspecified address reaches this
// machine, so it matches every entry at that port.
func (c *Client) own(addr netip.Addr, port uint16) bool {
	for _, o := range c.p.Own {
		if o.Port() != port {
			continue
		}
		oa := o.Addr().Unmap()
		switch {
		case oa == addr.WithZone(""), addr.IsUnspecified():
			return true
		case oa.IsUnspecified() && c.thisMachine(addr):
			return true
		}
	}
	return false
}

// thisMachine reports whether addr is an address of this machine.
func (c *Client) thisMachine(addr netip.Addr) bool {
	if addr.IsLoopback() {
		return true
	}
	ifs, err := interfaceAddrs()
	if err != nil {
		return true // unknown: refuse rather than risk the API
	}
	for _, ia := range ifs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap() == addr.WithZone("") {
				return true
			}
		}
	}
	return false
}

// dialer returns a DialContext that checks every address before it
// connects: the allow list by name was checked before the request, the
// addresses a name resolves to are checked here.
func (c *Client) dialer(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		pn, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("dial %s: bad port: %w", address, err)
		}
		if !c.allowed(strings.ToLower(host), port) {
			return nil, &DeniedError{Host: address, Reason: c.notAllowed()}
		}
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{a}
		} else {
			ips, err := c.p.Resolver.LookupIPAddr(ctx, host)
			if err != nil {
				return nil, fmt.Errorf("resolve %s: %w", host, err)
			}
			for _, ip := range ips {
				if a, ok := netip.AddrFromSlice(ip.IP); ok {
					addrs = append(addrs, a)
				}
			}
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
		for _, a := range addrs {
			if err := c.checkAddr(address, netip.AddrPortFrom(a, uint16(pn))); err != nil {
				return nil, err
			}
		}
		var lastErr error
		for _, a := range addrs {
			conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return conn, nil
			}
			lastErr = err
		}
		return nil, lastErr
	}
}
