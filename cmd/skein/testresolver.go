//go:build skeintest

package main

// A skein binary built with -tags skeintest resolves the HTTP activity's
// host names from $SKEIN_TEST_RESOLVE ("name=addr,name=addr"), so the
// tests can give a name any address without a DNS server; a name not
// listed is not found. The release binary has no such hook.

import (
	"context"
	"net"
	"os"
	"strings"
)

func init() {
	v := os.Getenv("SKEIN_TEST_RESOLVE")
	if v == "" {
		return
	}
	r := staticResolver{}
	for _, kv := range strings.Split(v, ",") {
		if name, addr, ok := strings.Cut(kv, "="); ok {
			r[name] = append(r[name], net.IPAddr{IP: net.ParseIP(addr)})
		}
	}
	testResolver = r
}

// staticResolver gives the names the addresses it lists.
type staticResolver map[string][]net.IPAddr

func (r staticResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
