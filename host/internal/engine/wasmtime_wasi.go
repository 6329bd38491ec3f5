//go:build wasmtime

package engine

import (
	"encoding/binary"
	"io"
	"strings"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// The WASI subset on wasmtime, in Go: what wazero gives a skein guest
// (see wazero.go's Run), with the same results. Arguments, the virtual
// clocks, seeded randomness, stdout and stderr to the host's writers,
// an empty stdin, an empty environment, no files (no preopened
// directory: every path and every descriptor but 0-2 is EBADF), no
// sockets. Every other function wazero provides is here with its
// signature and returns EBADF for a descriptor above 2 and ENOTSUP
// otherwise.

// WASI errno values.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoIO      = 29
	errnoNotsup  = 58
)

// wasiFunc is a WASI function: its parameters, its errno result.
type wasiFunc func(in *wtInstance, m *wtMemory, p []uint64) uint32

var le = binary.LittleEndian

var wasiFuncs = map[string]wasiFunc{
	"args_sizes_get":    argsSizesGet,
	"args_get":          argsGet,
	"environ_sizes_get": environSizesGet,
	"environ_get":       func(*wtInstance, *wtMemory, []uint64) uint32 { return errnoSuccess },
	"clock_res_get":     clockResGet,
	"clock_time_get":    clockTimeGet,
	"random_get":        randomGet,
	"fd_write":          fdWrite,
	"fd_read":           fdRead,
	"fd_fdstat_get":     fdFdstatGet,
	"fd_close":          fdClose,
	"sched_yield":       func(*wtInstance, *wtMemory, []uint64) uint32 { return errnoSuccess },
	"poll_oneoff":       pollOneoff,
}

// defineWASI defines the WASI functions in the engine's linker.
func (e *wtEngine) defineWASI() error {
	for name, t := range e.wasi {
		var cb func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap)
		switch fn := wasiFuncs[name]; {
		case name == "proc_exit":
			cb = procExit
		case fn != nil:
			cb = wasiTrampoline(fn)
		default:
			cb = wasiTrampoline(wasiUnsupported(name))
		}
		if err := e.linker.FuncNew(wasiModule, name, wtFuncType(t), cb); err != nil {
			return err
		}
	}
	return nil
}

// wasiTrampoline adapts fn to wasmtime.
func wasiTrampoline(fn wasiFunc) func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
	return func(c *wasmtime.Caller, args []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
		in := c.Data().(*wtInstance)
		var buf [8]uint64
		p := buf[:0]
		for _, a := range args {
			p = append(p, valBits(a))
		}
		return []wasmtime.Val{wasmtime.ValI32(int32(fn(in, in.memory(c), p)))}, nil
	}
}

// wasiUnsupported is a function of the filesystem or sockets: no
// descriptor above 2 exists, and stdio supports none of them.
func wasiUnsupported(name string) wasiFunc {
	takesFD := strings.HasPrefix(name, "fd_") || strings.HasPrefix(name, "path_") || strings.HasPrefix(name, "sock_")
	return func(_ *wtInstance, _ *wtMemory, p []uint64) uint32 {
		if takesFD && (len(p) == 0 || uint32(p[0]) > 2) {
			return errnoBadf
		}
		return errnoNotsup
	}
}

// procExit ends the instance with the guest's exit code.
func procExit(c *wasmtime.Caller, args []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
	in := c.Data().(*wtInstance)
	in.exit = &ExitError{Code: uint32(args[0].I32())}
	return nil, wasmtime.NewTrap("skein: proc_exit")
}

func argsSizesGet(in *wtInstance, m *wtMemory, p []uint64) uint32 {
	return writeU32s(m, uint32(p[0]), uint32(len(in.rc.Args)), uint32(p[1]), uint32(len(in.args)))
}

func argsGet(in *wtInstance, m *wtMemory, p []uint64) uint32 {
	argv, buf := uint32(p[0]), uint32(p[1])
	if !m.Write(buf, in.args) {
		return errnoFault
	}
	off := buf
	for i, a := range in.rc.Args {
		var b [4]byte
		le.PutUint32(b[:], off)
		if !m.Write(argv+uint32(4*i), b[:]) {
			return errnoFault
		}
		off += uint32(len(a)) + 1
	}
	return errnoSuccess
}

func environSizesGet(_ *wtInstance, m *wtMemory, p []uint64) uint32 {
	return writeU32s(m, uint32(p[0]), 0, uint32(p[1]), 0)
}

// writeU32s writes a at pa and b at pb.
func writeU32s(m *wtMemory, pa, a, pb, b uint32) uint32 {
	var buf [4]byte
	le.PutUint32(buf[:], a)
	if !m.Write(pa, buf[:]) {
		return errnoFault
	}
	le.PutUint32(buf[:], b)
	if !m.Write(pb, buf[:]) {
		return errnoFault
	}
	return errnoSuccess
}

func writeU64(m *wtMemory, ptr uint32, v uint64) uint32 {
	var buf [8]byte
	le.PutUint64(buf[:], v)
	if !m.Write(ptr, buf[:]) {
		return errnoFault
	}
	return errnoSuccess
}

func clockResGet(_ *wtInstance, m *wtMemory, p []uint64) uint32 {
	if id := uint32(p[0]); id > 1 {
		return errnoInval
	}
	return writeU64(m, uint32(p[1]), 1)
}

func clockTimeGet(in *wtInstance, m *wtMemory, p []uint64) uint32 {
	var v int64
	switch uint32(p[0]) {
	case 0:
		sec, nsec := in.rc.Walltime()
		v = sec*1e9 + int64(nsec)
	case 1:
		v = in.rc.Nanotime()
	default:
		return errnoInval
	}
	return writeU64(m, uint32(p[2]), uint64(v))
}

func randomGet(in *wtInstance, m *wtMemory, p []uint64) uint32 {
	b, ok := m.Read(uint32(p[0]), uint32(p[1]))
	if !ok {
		return errnoFault
	}
	if _, err := io.ReadFull(in.rc.Rand, b); err != nil {
		return errnoIO
	}
	return errnoSuccess
}

// iovecs returns the buffers of an iovec array.
func iovecs(m *wtMemory, iovs, n uint32) ([][]byte, bool) {
	arr, ok := m.Read(iovs, n*8)
	if !ok || uint64(n)*8 > 1<<32 {
		return nil, false
	}
	out := make([][]byte, n)
	for i := range out {
		b, ok := m.Read(le.Uint32(arr[8*i:]), le.Uint32(arr[8*i+4:]))
		if !ok {
			return nil, false
		}
		out[i] = b
	}
	return out, true
}

func fdWrite(in *wtInstance, m *wtMemory, p []uint64) uint32 {
	var w io.Writer
	switch uint32(p[0]) {
	case 1:
		w = in.rc.Stdout
	case 2:
		w = in.rc.Stderr
	case 0:
		return errnoNotsup
	default:
		return errnoBadf
	}
	bufs, ok := iovecs(m, uint32(p[1]), uint32(p[2]))
	if !ok {
		return errnoFault
	}
	total := uint32(0)
	for _, b := range bufs {
		if w != nil {
			if _, err := w.Write(b); err != nil {
				return errnoIO
			}
		}
		total += uint32(len(b))
	}
	var buf [4]byte
	le.PutUint32(buf[:], total)
	if !m.Write(uint32(p[3]), buf[:]) {
		return errnoFault
	}
	return errnoSuccess
}

// fdRead reads stdin, which is empty.
func fdRead(_ *wtInstance, m *wtMemory, p []uint64) uint32 {
	switch uint32(p[0]) {
	case 0:
		if _, ok := iovecs(m, uint32(p[1]), uint32(p[2])); !ok {
			return errnoFault
		}
		return writeU32s(m, uint32(p[3]), 0, uint32(p[3]), 0)
	case 1, 2:
		return errnoNotsup
	}
	return errnoBadf
}

// fdFdstatGet describes stdin, stdout and stderr as wazero does: blocking
// character devices.
func fdFdstatGet(_ *wtInstance, m *wtMemory, p []uint64) uint32 {
	if uint32(p[0]) > 2 {
		return errnoBadf
	}
	const fileRights = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<21 | 1<<22 | 1<<23 | 1<<27
	var st [24]byte
	st[0] = 2 // character device
	le.PutUint64(st[8:], fileRights&^(1<<2|1<<5))
	if !m.Write(uint32(p[1]), st[:]) {
		return errnoFault
	}
	return errnoSuccess
}

func fdClose(_ *wtInstance, _ *wtMemory, p []uint64) uint32 {
	if uint32(p[0]) > 2 {
		return errnoBadf
	}
	return errnoSuccess
}

// pollOneoff waits as wazero's does: clock subscriptions sleep (the
// virtual Nanosleep) for the shortest timeout when every subscription
// is ready at once; reading stdout/stderr or the empty stdin never is.
func pollOneoff(in *wtInstance, m *wtMemory, p []uint64) uint32 {
	inPtr, outPtr, n, nevPtr := uint32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[3])
	if n == 0 {
		return errnoInval
	}
	subs, ok := m.Read(inPtr, n*48)
	if !ok {
		return errnoFault
	}
	out, ok := m.Read(outPtr, n*32)
	if !ok {
		return errnoFault
	}
	clear(out)
	if writeU32s(m, nevPtr, n, nevPtr, n) != errnoSuccess {
		return errnoFault
	}
	timeout := int64(1<<63 - 1)
	nevents := uint32(0)
	event := func(sub []byte, errno uint16) {
		e := out[nevents*32:]
		copy(e, sub[:8])
		le.PutUint16(e[8:], errno)
		le.PutUint32(e[10:], uint32(sub[8]))
		nevents++
	}
	for i := uint32(0); i < n; i++ {
		sub := subs[i*48:]
		arg := sub[16:]
		switch sub[8] {
		case 0: // clock
			switch le.Uint16(arg[24:]) {
			case 0:
			case 1:
				return errnoNotsup
			default:
				return errnoInval
			}
			timeout = min(timeout, int64(le.Uint64(arg[8:])))
			event(sub, 0)
		case 1: // fd_read
			if fd := int32(le.Uint32(arg)); fd < 0 {
				return errnoBadf
			} else if fd > 2 {
				event(sub, errnoBadf)
			} // stdio: blocking, never ready
		case 2: // fd_write
			fd := int32(le.Uint32(arg))
			switch {
			case fd < 0:
				return errnoBadf
			case fd > 2:
				event(sub, errnoBadf)
			default:
				event(sub, errnoNotsup)
			}
		default:
			return errnoInval
		}
	}
	if nevents == n {
		if timeout > 0 {
			in.rc.Nanosleep(timeout)
		}
		return errnoSuccess
	}
	return writeU32s(m, nevPtr, nevents, nevPtr, nevents)
}
