package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/skeinrun/skein/activity"
)

const linkLocalWhat = "a link-local address (such as a cloud metadata endpoint)"

// TestClassify: every range of the special-purpose registries that is not
// globally reachable, and every form that embeds such an IPv4 address,
// is special; loopback, private and shared addresses are local; public
// addresses, and the forms that embed one, are public.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		addr string
		kind kind
		what string
	}{
		// IPv4.
		{"8.8.8.8", public, ""},
		{"192.0.1.1", public, ""},
		{"192.31.196.1", public, ""}, // AS112, globally reachable
		{"127.0.0.1", local, "a loopback address"},
		{"127.255.0.9", local, "a loopback address"},
		{"10.1.2.3", local, "a private address"},
		{"172.16.0.1", local, "a private address"},
		{"172.31.255.255", local, "a private address"},
		{"172.32.0.1", public, ""},
		{"192.168.1.1", local, "a private address"},
		{"100.64.0.1", local, "a shared address (100.64.0.0/10)"},
		{"100.100.100.200", special, "a cloud metadata address"},
		{"0.0.0.0", special, "an unspecified address"},
		{"0.1.2.3", special, `a "this network" address (0.0.0.0/8)`},
		{"169.254.169.254", special, linkLocalWhat},
		{"192.0.0.192", special, "a cloud metadata address"},
		{"192.0.0.8", special, "an IETF protocol address (192.0.0.0/24)"},
		{"192.0.2.1", special, "a documentation address (192.0.2.0/24)"},
		{"198.51.100.7", special, "a documentation address (198.51.100.0/24)"},
		{"203.0.113.9", special, "a documentation address (203.0.113.0/24)"},
		{"192.88.99.1", special, "a 6to4 relay anycast address (192.88.99.0/24)"},
		{"198.19.0.1", special, "a benchmarking address (198.18.0.0/15)"},
		{"224.0.0.1", special, "a multicast address"},
		{"239.255.255.250", special, "a multicast address"},
		{"240.0.0.1", special, "a reserved address (240.0.0.0/4)"},
		{"255.255.255.255", special, "the broadcast address"},
		// IPv4-mapped addresses are their IPv4 address.
		{"::ffff:169.254.169.254", special, linkLocalWhat},
		{"::ffff:127.0.0.1", local, "a loopback address"},
		{"::ffff:8.8.8.8", public, ""},
		// IPv6.
		{"2606:4700::1111", public, ""},
		{"::1", local, "a loopback address"},
		{"fd12::1", local, "a private address"},
		{"fd00:ec2::254", special, "a cloud metadata address"},
		{"::", special, "an unspecified address"},
		{"fe80::1", special, linkLocalWhat},
		{"fe80::1%eth0", special, linkLocalWhat},
		{"fec0::1", special, "a site-local address (fec0::/10, deprecated)"},
		{"ff02::1", special, "a multicast address"},
		{"2001:db8::1", special, "a documentation address (2001:db8::/32)"},
		{"3fff::1", special, "a documentation address (3fff::/20)"},
		{"100::1", special, "a discard-only address (100::/64)"},
		{"2001:2::1", special, "an IETF protocol address (2001::/23)"},
		{"64:ff9b:1::a9fe:a9fe", special, "a local-use NAT64 address (64:ff9b:1::/48)"},
		{"fe00::", special, "a reserved address (outside 2000::/3)"},
		{"::ffff:0:a9fe:a9fe", special, "a reserved address (outside 2000::/3)"},
		{"4000::1", special, "a reserved address (outside 2000::/3)"},
		// Forms that embed an IPv4 address.
		{"64:ff9b::a9fe:a9fe", special, "a NAT64 address embedding 169.254.169.254, " + linkLocalWhat},
		{"64:ff9b::c000:c0", special, "a NAT64 address embedding 192.0.0.192, a cloud metadata address"},
		{"64:ff9b::7f00:1", special, "a NAT64 address embedding 127.0.0.1, a loopback address"},
		{"64:ff9b::a00:1", special, "a NAT64 address embedding 10.0.0.1, a private address"},
		{"64:ff9b::808:808", public, ""},
		{"::a9fe:a9fe", special, "an IPv4-compatible address (::/96, deprecated) embedding 169.254.169.254, " + linkLocalWhat},
		{"::808:808", special, "an IPv4-compatible address (::/96, deprecated) embedding 8.8.8.8"},
		{"::2", special, "an IPv4-compatible address (::/96, deprecated) embedding 0.0.0.2, " + `a "this network" address (0.0.0.0/8)`},
		{"2002:a9fe:a9fe::1", special, "a 6to4 address embedding 169.254.169.254, " + linkLocalWhat},
		{"2002:7f00:1::", special, "a 6to4 address embedding 127.0.0.1, a loopback address"},
		{"2002:808:808::1", public, ""},
		{"2001:0:4136:e378:8000:63bf:5601:5601", special, "a Teredo address (2001::/32) whose client is 169.254.169.254, " + linkLocalWhat},
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", special, "a Teredo address (2001::/32) whose client is 8.8.8.8"},
	} {
		k, what := classify(netip.MustParseAddr(tc.addr))
		if k != tc.kind || what != tc.what {
			t.Errorf("%s: kind %d %q, want %d %q", tc.addr, k, what, tc.kind, tc.what)
		}
	}
}

// TestSpecialByName: a name the allow list allows is denied when it
// resolves to a special address, with the error naming the address and
// what it embeds; naming that address itself allows it, naming the IPv4
// address it embeds does not.
func TestSpecialByName(t *testing.T) {
	res := fakeResolver{"nat64.test": "64:ff9b::a9fe:a9fe", "docs.test": "192.0.2.1", "private.test": "10.0.0.1"}
	c := newClient(t, Policy{Allow: []string{"nat64.test", "docs.test", "private.test", "169.254.169.254"}, Resolver: res})
	ap := func(a string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(a), 80) }
	err := c.checkAddr("nat64.test:80", ap("64:ff9b::a9fe:a9fe"))
	want := "HTTP request to nat64.test:80 denied: it resolves to 64:ff9b::a9fe:a9fe, a NAT64 address embedding 169.254.169.254, " + linkLocalWhat +
		"; name the address itself in the egress allow list (Policy.Allow) to allow it"
	if err == nil || err.Error() != want {
		t.Errorf("NAT64 form of a named IPv4 address: %v\nwant %s", err, want)
	}
	_, err = c.Do(context.Background(), activity.HTTPRequest{URL: "http://docs.test/"})
	if want := "it resolves to 192.0.2.1, a documentation address (192.0.2.0/24)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("documentation address by name: %v, want %q", err, want)
	}
	if err := c.checkAddr("private.test:80", ap("10.0.0.1")); err != nil {
		t.Errorf("private address by name: %v", err)
	}
	named := newClient(t, Policy{Allow: []string{"[64:ff9b::a9fe:a9fe]", "192.0.2.1:8080"}})
	for _, a := range []string{"64:ff9b::a9fe:a9fe", "192.0.2.1"} {
		if err := named.checkAddr("x:80", ap(a)); err != nil {
			t.Errorf("%s named in the allow list: %v", a, err)
		}
	}
}

// TestOwnAddresses: requests never reach Policy.Own, even with the host
// allowed, by address, by name or by a redirect; an unspecified address
// in Own stands for every address of the machine at its port, and other
// ports stay reachable.
func TestOwnAddresses(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Errorf("the API got %s %s", r.Method, r.URL) }))
	defer api.Close()
	_, addr := server(t)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	defer other.Close()
	apiAP := api.Listener.Addr().(*net.TCPAddr).AddrPort()
	self := apiAP.String()
	port := fmt.Sprint(apiAP.Port())
	for _, own := range []netip.AddrPort{apiAP, netip.AddrPortFrom(netip.IPv4Unspecified(), apiAP.Port()), netip.AddrPortFrom(netip.IPv6Unspecified(), apiAP.Port())} {
		c := newClient(t, Policy{Allow: []string{"127.0.0.1", "self.test", "0.0.0.0"}, Own: []netip.AddrPort{own}, OwnSetting: "the API (Own)",
			Resolver: fakeResolver{"self.test": "127.0.0.1"}})
		reason := " denied: it resolves to " + self + ", the API (Own); requests never reach it, whatever the egress allow list names"
		for _, tc := range []struct{ url, want string }{
			{"http://" + self + "/v1/runs", "HTTP request to " + self + reason},
			{"http://self.test:" + port + "/v1/runs", "HTTP request to self.test:" + port + reason},
			{"http://0.0.0.0:" + port + "/v1/runs", "HTTP request to 0.0.0.0:" + port + " denied: it resolves to 0.0.0.0:" + port},
			{other.URL + "/?to=http://" + self + "/", "HTTP redirect from " + other.URL + "/?to=http://" + self + "/ to " + self + reason},
			{other.URL + "/?to=http://self.test:" + port + "/", "HTTP redirect from " + other.URL + "/?to=http://self.test:" + port + "/ to self.test:" + port + reason},
		} {
			_, err := c.Do(context.Background(), activity.HTTPRequest{URL: tc.url})
			var d *DeniedError
			if !errors.As(err, &d) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Own %s, %s: %v\nwant %s", own, tc.url, err, tc.want)
			}
		}
		if _, err := c.Do(context.Background(), activity.HTTPRequest{URL: "http://" + addr + "/echo"}); err != nil {
			t.Errorf("Own %s: another port: %v", own, err)
		}
	}
}

// TestOwnThisMachine: an unspecified address in Own matches this
// machine's interface addresses and loopback, not other addresses.
func TestOwnThisMachine(t *testing.T) {
	defer func(f func() ([]net.Addr, error)) { interfaceAddrs = f }(interfaceAddrs)
	interfaceAddrs = func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("10.0.0.5"), Mask: net.CIDRMask(24, 32)}, &net.IPNet{IP: net.ParseIP("2606:4700::5"), Mask: net.CIDRMask(64, 128)}}, nil
	}
	c := newClient(t, Policy{Own: []netip.AddrPort{netip.MustParseAddrPort("[::]:7070")}})
	for a, want := range map[string]bool{"10.0.0.5": true, "::ffff:10.0.0.5": true, "2606:4700::5": true, "127.0.0.2": true, "::1": true, "::": true, "10.0.0.6": false, "8.8.8.8": false} {
		if got := c.own(netip.MustParseAddr(a).Unmap(), 7070); got != want {
			t.Errorf("%s:7070 own: %t, want %t", a, got, want)
		}
		if c.own(netip.MustParseAddr(a).Unmap(), 7071) {
			t.Errorf("%s:7071 own", a)
		}
	}
}
