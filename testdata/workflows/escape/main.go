// Command escape holds workflows that try to leave the sandbox: read host
// files, the environment, the network, the real clock and real
// randomness (host/escape_test.go). Each reports what it saw.
package main

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

//go:wasmimport wasi_snapshot_preview1 sock_accept
func sockAccept(fd, flags uint32, newFD *uint32) uint32

// files tries to read, list and create host files.
func files(ctx *skein.Context, _ struct{}) (map[string]string, error) {
	out := map[string]string{}
	b, err := os.ReadFile("/etc/passwd")
	out["read /etc/passwd"] = fmt.Sprintf("%d bytes, %v", len(b), err)
	_, err = os.ReadDir("/")
	out["list /"] = fmt.Sprint(err)
	_, err = os.ReadFile("../../../../etc/passwd")
	out["read ../etc/passwd"] = fmt.Sprint(err)
	err = os.WriteFile("/tmp/skein-escape", []byte("x"), 0o644)
	out["write /tmp"] = fmt.Sprint(err)
	wd, err := os.Getwd()
	out["getwd"] = fmt.Sprintf("%q %v", wd, err)
	return out, nil
}

// env reads the environment and the arguments.
func env(ctx *skein.Context, _ struct{}) (map[string]string, error) {
	home, ok := os.LookupEnv("HOME")
	return map[string]string{
		"HOME":    fmt.Sprintf("%q %v", home, ok),
		"environ": fmt.Sprint(len(os.Environ())),
		"args":    strings.Join(os.Args, " "),
	}, nil
}

// network dials a port the test listens on, and tries to accept on the
// file descriptors a WASI host could have preopened. (Go's net package on
// wasip1 has an in-process fake network: net.Listen works, but nothing
// outside the instance can reach it.)
func network(ctx *skein.Context, port int) (map[string]string, error) {
	out := map[string]string{}
	_, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	out["dial"] = fmt.Sprint(err)
	accepted := 0
	for fd := uint32(0); fd < 16; fd++ {
		var nfd uint32
		if sockAccept(fd, 0, &nfd) == 0 {
			accepted++
		}
	}
	out["accept"] = fmt.Sprint(accepted)
	return out, nil
}

// clock reads the clock twice around a long computation, then reads the
// real clock in step bodies, which is allowed and recorded.
type clockOut struct {
	First, Second int64 // time.Now in workflow code, Unix ns
	Mono          int64 // time.Since(First) across the computation
	Real1, Real2  int64 // StepContext.Now in two steps
	Random        string
	StepRandom    string
}

//lint:ignore U1000 written, never read: a global the compiler cannot drop the loop over
var spins uint64

func clock(ctx *skein.Context, _ struct{}) (clockOut, error) {
	var o clockOut
	t1 := time.Now()
	for i := 0; i < 5_000_000; i++ { // real computing
		spins++
	}
	t2 := time.Now()
	o.First, o.Second, o.Mono = t1.UnixNano(), t2.UnixNano(), int64(t2.Sub(t1))
	var b [16]byte
	crand.Read(b[:])
	o.Random = hex.EncodeToString(b[:])
	var err error
	if o.Real1, err = skein.Step(ctx, "now", func(s *skein.StepContext) (int64, error) { return s.Now().UnixNano(), nil }); err != nil {
		return o, err
	}
	if _, err := skein.Sleep(ctx, 20*time.Millisecond).Get(ctx); err != nil {
		return o, err
	}
	if o.Real2, err = skein.Step(ctx, "now", func(s *skein.StepContext) (int64, error) { return s.Now().UnixNano(), nil }); err != nil {
		return o, err
	}
	o.StepRandom, err = skein.Step(ctx, "rand", func(s *skein.StepContext) (string, error) {
		return fmt.Sprint(s.Rand().Int64()), nil
	})
	return o, err
}

func main() {
	skein.Register("files", files)
	skein.Register("env", env)
	skein.Register("network", network)
	skein.Register("clock", clock)
	skein.Main()
}
