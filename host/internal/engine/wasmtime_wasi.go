//go:build wasmtime

package engine

import (
	"encoding/binary"
	"io"
	"io/fs"
	"path"
	"strings"
)

// The WASI subset on wasmtime, in Go: what wazero gives a skein guest
// (see wazero.go's Run), with the same results (TestWASICrossEngine).
// Arguments, the virtual clocks, seeded randomness, stdout and stderr to
// the host's writers, an empty stdin, an empty environment, no files (no
// preopened directory: every descriptor but stdio is EBADF), no sockets.
// Every other function wazero provides is here with its signature and
// wazero's answer for a guest without files: EBADF, ENOTDIR on stdio,
// EFAULT or EPERM for a bad path, ENOSYS.

// WASI errno values.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoIO      = 29
	errnoNosys   = 52
	errnoNotdir  = 54
	errnoNotsup  = 58
	errnoPerm    = 63
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
	"fd_filestat_get":   fdFilestatGet,
	"sched_yield":       func(*wtInstance, *wtMemory, []uint64) uint32 { return errnoSuccess },
	"poll_oneoff":       pollOneoff,
}

// defineWASI defines the WASI functions in the engine's linker.
func (e *wtEngine) defineWASI() error {
	for name, t := range e.wasi {
		fn := wasiFuncs[name]
		if fn == nil {
			fn = wasiUnsupported(name)
		}
		f := wtHostFunc{name: name, nparams: len(t.Params), results: t.Results,
			call: func(in *wtInstance, m *wtMemory, p []uint64) bool {
				p[0] = uint64(fn(in, m, p))
				return true
			}}
		if name == "proc_exit" {
			f.call = procExit
		}
		if err := defineFunc(e.linker, wasiModule, name, t, f); err != nil {
			return err
		}
	}
	return nil
}

// pathArg is where the path of the path_* functions that take a
// directory descriptor first is among their parameters.
var pathArg = map[string]int{
	"path_open": 2, "path_filestat_get": 2, "path_filestat_set_times": 2,
	"path_create_directory": 1, "path_remove_directory": 1, "path_unlink_file": 1, "path_readlink": 1,
}

// wasiUnsupported is a function of the filesystem or sockets: no
// descriptor above 2 exists, and stdio supports none of them. A path
// is checked first, as wazero does: unreadable is EFAULT, absolute or
// escaping EPERM; stdio is not a directory (ENOTDIR).
func wasiUnsupported(name string) wasiFunc {
	takesFD := strings.HasPrefix(name, "fd_") || strings.HasPrefix(name, "path_")
	at, hasPath := pathArg[name]
	return func(in *wtInstance, m *wtMemory, p []uint64) uint32 {
		switch {
		case strings.HasPrefix(name, "sock_"):
			return errnoBadf // no descriptor is a socket
		case hasPath:
			b, ok := m.Read(uint32(p[at]), uint32(p[at+1]))
			if !ok {
				return errnoFault
			}
			if !fs.ValidPath(path.Clean(string(b))) {
				return errnoPerm
			}
			if !in.stdio(p[0]) {
				return errnoBadf
			}
			return errnoNotdir
		case takesFD && (len(p) == 0 || !in.stdio(p[0])):
			return errnoBadf
		}
		return errnoNosys
	}
}

// stdio reports whether fd is stdin, stdout or stderr, not closed: the
// only descriptors there are.
func (in *wtInstance) stdio(fd uint64) bool {
	return uint32(fd) <= 2 && !in.closed[uint32(fd)]
}

// procExit ends the instance with the guest's exit code.
func procExit(in *wtInstance, _ *wtMemory, p []uint64) bool {
	in.exit = &ExitError{Code: uint32(p[0])}
	return false
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
	switch fd := uint32(p[0]); {
	case fd == 0 || !in.stdio(p[0]):
		return errnoBadf
	case fd == 1:
		w = in.rc.Stdout
	default:
		w = in.rc.Stderr
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
func fdRead(in *wtInstance, m *wtMemory, p []uint64) uint32 {
	if uint32(p[0]) != 0 || !in.stdio(p[0]) {
		return errnoBadf
	}
	if _, ok := iovecs(m, uint32(p[1]), uint32(p[2])); !ok {
		return errnoFault
	}
	return writeU32s(m, uint32(p[3]), 0, uint32(p[3]), 0)
}

// fdFdstatGet describes stdin, stdout and stderr as wazero describes
// its stdio when they are not OS files: blocking block devices with a
// file's rights.
func fdFdstatGet(in *wtInstance, m *wtMemory, p []uint64) uint32 {
	if !in.stdio(p[0]) {
		return errnoBadf
	}
	const fileRights = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<21 | 1<<22 | 1<<23 | 1<<27
	var st [24]byte
	st[0] = 1 // block device
	le.PutUint64(st[8:], fileRights)
	if !m.Write(uint32(p[1]), st[:]) {
		return errnoFault
	}
	return errnoSuccess
}

func fdClose(in *wtInstance, _ *wtMemory, p []uint64) uint32 {
	if !in.stdio(p[0]) {
		return errnoBadf
	}
	in.closed[uint32(p[0])] = true
	return errnoSuccess
}

// fdFilestatGet describes stdio as wazero does: a block device, one link.
func fdFilestatGet(in *wtInstance, m *wtMemory, p []uint64) uint32 {
	if !in.stdio(p[0]) {
		return errnoBadf
	}
	var st [64]byte
	st[16] = 1 // block device
	le.PutUint64(st[24:], 1)
	if !m.Write(uint32(p[1]), st[:]) {
		return errnoFault
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
			} else if !in.stdio(uint64(fd)) {
				event(sub, errnoBadf)
			} // stdio: blocking, never ready
		case 2: // fd_write
			fd := int32(le.Uint32(arg))
			switch {
			case fd < 0:
				return errnoBadf
			case !in.stdio(uint64(fd)):
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
