package exec

import (
	"context"
	"sort"

	"github.com/skeinrun/skein/host/internal/engine"
)

// What the host's tests use to play the guest without a module: they
// call host functions in any order with any arguments, as a hostile
// guest would (host/fuzz_test.go, host/feed_test.go), and compare the
// host functions with the C header (host/skeinh_test.go).

// HostFnNames are the names of the host functions, sorted.
func HostFnNames() []string {
	names := make([]string, 0, len(hostFns))
	for n := range hostFns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// HostFnType is the signature of the host function name.
func HostFnType(name string) (engine.FuncType, bool) {
	f, ok := hostFns[name]
	return f.sig, ok
}

// CallHost makes one call of the host function name, through the entry
// a wasm call takes (hostCall), with its arguments and results on stack.
// It returns ErrEnded when the call ended the execution (State says how).
func (x *Exec) CallHost(ctx context.Context, mem engine.Memory, name string, stack []uint64) error {
	return hostCall(ctx, x, mem, name, progressFns[name], hostFns[name].call, stack)
}

// SetBase sets the execution's context, as Instantiate does.
func (x *Exec) SetBase(ctx context.Context) { x.base = ctx }

// FeedHeld is the number of replayed outcomes of the last feed the guest
// has not reported the use of.
func (x *Exec) FeedHeld() int { return len(x.fed.entries) }
