package host

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/exec"
)

// FuzzHostCalls feeds the host functions arbitrary arguments and guest
// memory, in arbitrary order, through the same entry (hostCall) the wasm
// module uses, with a fake linear memory of 64 KiB. A host function may
// end the execution (it returns errExecEnded, and x.state says how); a
// panic, another error, or an execution that stopped without a reason is
// a bug. The seeds run in `make test`;
// run `go test -fuzz FuzzHostCalls ./host/` to search further.
//
// Input layout: byte 0: bit 0 = describe mode; byte 1: how many 16-byte
// blocks of memory follow (copied to address 0); then calls, each one
// byte (the function, modulo the number of host functions, in the order
// of fuzzCallOrder) and ten little-endian u32 arguments (body_sleep's
// i64 is arguments 1 and 2).
func FuzzHostCalls(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	h := newTestHost(f, Config{Evict: EvictNever, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), IdleThreshold: 10 * time.Millisecond})
	h.RegisterActivity("echo", echoActivity)
	h.RegisterActivity("s", echoActivity)
	m := h.deploy(f, "./testdata/workflows/hostile")
	run, err := h.Start(context.Background(), StartOptions{Module: m.Hash, Workflow: "ok", ID: "fuzz", Seed: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var x *exec.Exec
		if data[0]&1 == 1 {
			x = exec.NewDescribe(h.Host.execHost())
		} else {
			rs := newRunState(run, DriveOptions{})
			defer rs.Close()
			x = exec.NewExec(h.Host.execHost(), rs.RunState, nil)
		}
		x.SetBase(ctx)
		mem := &fakeMemory{b: make([]byte, 64<<10)}
		blocks := min(int(data[1])*16, len(data)-2)
		copy(mem.b, data[2:2+blocks])
		calls := data[2+blocks:]
		for len(calls) > 0 && x.State == exec.Running {
			var c [41]byte
			calls = calls[copy(c[:], calls):]
			name := fuzzCallOrder[int(c[0])%len(fuzzCallOrder)]
			sig, _ := exec.HostFnType(name)
			stack := make([]uint64, max(len(sig.Params), len(sig.Results)))
			for i := range sig.Params {
				stack[i] = uint64(binary.LittleEndian.Uint32(c[1+4*i:]))
			}
			if name == abi.FnBodySleep {
				stack[1] = binary.LittleEndian.Uint64(c[5:])
			}
			if !fuzzCall(t, ctx, x, mem, name, stack) {
				break
			}
		}
		if x.State == exec.Failed && x.Failure == nil {
			t.Fatalf("the execution failed without an error")
		}
	})
}

// fuzzCall makes one host call and reports whether the execution goes on.
func fuzzCall(t *testing.T, ctx context.Context, x *exec.Exec, mem *fakeMemory, name string, stack []uint64) (goesOn bool) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("host function %s panicked: %v", name, r)
		}
	}()
	err := x.CallHost(ctx, mem, name, stack)
	switch {
	case err == nil:
		return true
	case !errors.Is(err, exec.ErrEnded):
		t.Fatalf("host function %s returned %v; want nil or errExecEnded", name, err)
	case x.State == exec.Running:
		t.Fatalf("host function %s ended the module without a state", name)
	}
	return false
}

// fuzzCallOrder numbers the host functions for FuzzHostCalls.
var fuzzCallOrder = []string{abi.FnHello, abi.FnWorkflows, abi.FnInvocation, abi.FnTake, abi.FnNext, abi.FnOp,
	abi.FnStepDone, abi.FnAwait, abi.FnSelect, abi.FnTaskDone, abi.FnBodySleep, abi.FnRealNow, abi.FnRealRand,
	abi.FnOutcomes, abi.FnOpOptions, abi.FnCanceled, abi.FnContinue, abi.FnFeed}

func fuzzIndex(name string) byte {
	for i, n := range fuzzCallOrder {
		if n == name {
			return byte(i)
		}
	}
	panic(name)
}

// fuzzInput encodes memory and calls in FuzzHostCalls' layout.
func fuzzInput(describe bool, mem []byte, calls ...[]uint32) []byte {
	b := []byte{0, byte((len(mem) + 15) / 16)}
	if describe {
		b[0] = 1
	}
	b = append(b, mem...)
	b = append(b, make([]byte, int(b[1])*16-len(mem))...)
	for _, c := range calls {
		b = append(b, byte(c[0]))
		var args [40]byte
		for i, a := range c[1:] {
			binary.LittleEndian.PutUint32(args[4*i:], a)
		}
		b = append(b, args[:]...)
	}
	return b
}

func fuzzSeeds() [][]byte {
	// memory: "ok" at 0, "s" at 2, "1" at 3, sleep duration at 8, op
	// promise ids at 48, a fork handle at 56, op options at 64, replies
	// at 1024.
	mem := make([]byte, 128)
	copy(mem, "oks1")
	binary.LittleEndian.PutUint64(mem[8:], uint64(time.Millisecond))
	opts := abi.AppendOpOptions(nil, abi.OpOptions{MaxAttempts: 2})
	copy(mem[64:], opts)
	binary.LittleEndian.PutUint32(mem[48:], 2)
	binary.LittleEndian.PutUint32(mem[52:], 3)
	binary.LittleEndian.PutUint32(mem[56:], 1)
	c := func(name string, args ...uint32) []uint32 { return append([]uint32{uint32(fuzzIndex(name))}, args...) }
	intro := [][]uint32{c(abi.FnHello, 1), c(abi.FnWorkflows, 0, 2), c(abi.FnInvocation, 1024, 4096), c(abi.FnNext, 1024, 4096)}
	seq := func(calls ...[]uint32) [][]uint32 { return append(append([][]uint32{}, intro...), calls...) }
	op := func(kind abi.OpKind, argPtr, argLen uint32) []uint32 {
		return c(abi.FnOp, 1, uint32(kind), 0, 0, 2, 1, argPtr, argLen, 1024, 4096)
	}
	return [][]byte{
		fuzzInput(true, mem, intro...),
		fuzzInput(false, mem, seq(op(abi.OpStep, 0, 0), c(abi.FnRealNow), c(abi.FnRealRand, 1024, 16),
			c(abi.FnStepDone, 1, 2, abi.StatusOK, 3, 1), c(abi.FnOutcomes, 1024, 4096), c(abi.FnTaskDone, 1, abi.StatusOK, 3, 1))...),
		fuzzInput(false, mem, seq(op(abi.OpSleep, 8, 8), c(abi.FnAwait, 1, 2, 1024, 4096), c(abi.FnNext, 1024, 4096),
			c(abi.FnTaskDone, 1, abi.StatusError, 0, 2))...),
		fuzzInput(false, mem, seq(op(abi.OpSpawn, 0, 0), op(abi.OpStep, 0, 0), c(abi.FnBodySleep, 1, 1000, 0),
			c(abi.FnNext, 1024, 4096), c(abi.FnTaskDone, 2, abi.StatusOK, 3, 1), c(abi.FnNext, 1024, 4096), c(abi.FnStepDone, 1, 3, abi.StatusOK, 3, 1),
			c(abi.FnSelect, 1, 48, 2, 1024, 4096), c(abi.FnCanceled, 1024, 4096))...),
		fuzzInput(false, mem, seq(c(abi.FnOpOptions, 1, 64, uint32(len(opts))), op(abi.OpCall, 3, 1), c(abi.FnAwait, 1, 2, 1024, 4),
			c(abi.FnTake, 1024, 20), c(abi.FnNext, 1024, 4096))...),
		fuzzInput(false, mem, seq(op(abi.OpFork, 0, 0), op(abi.OpBranch, 56, 4), op(abi.OpPromise, 0, 0), op(abi.OpChild, 3, 1))...),
		fuzzInput(false, mem, c(abi.FnNext, 1024, 4096), c(abi.FnOp, 99, 1, 0xFFFFFF00, 64, 0, 0, 0, 0, 0, 0)),
		fuzzInput(false, mem, seq(c(abi.FnFeed, 1, 0, 1024, 4096), c(abi.FnFeed, 1, 1, 0, 0), c(abi.FnFeed, 1, 0, 0xFFFFFF00, 64))...),
	}
}

// fakeMemory is a guest's linear memory (engine.Memory).
type fakeMemory struct {
	b []byte
}

func (m *fakeMemory) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m.b)) {
		return nil, false
	}
	return m.b[off : off+n : off+n], true
}

func (m *fakeMemory) Write(off uint32, v []byte) bool {
	if uint64(off)+uint64(len(v)) > uint64(len(m.b)) {
		return false
	}
	copy(m.b[off:], v)
	return true
}
