package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// defaultInitTimeout bounds a reactor module's _initialize when the
// engine takes its snapshot and Config.InitTimeout is 0.
const defaultInitTimeout = 10 * time.Second

// prepareReactor returns the module's sections, ready to be assembled
// and compiled, and the module's shape: a reactor to be snapshotted gets
// exports for its globals. sections is nil when the module cannot be
// parsed (the compiler reports what is wrong).
func (e *wazeroEngine) prepareReactor(wasm []byte) ([]wasmSection, reactorShape) {
	sections, err := sectionsOf(wasm)
	if err != nil {
		return nil, reactorShape{}
	}
	s, err := shapeOf(sections)
	if err != nil || !s.reactor || e.cfg.NoSnapshots {
		return sections, s
	}
	return exportGlobals(sections, s), s
}

// initContext bounds a reactor's _initialize by limit, or by
// defaultInitTimeout when limit is 0; it returns the bound too.
func initContext(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc, time.Duration) {
	if limit <= 0 {
		limit = defaultInitTimeout
	}
	ictx, cancel := context.WithTimeout(ctx, limit)
	return ictx, cancel, limit
}

// snapshot runs the reactor's start-up (_initialize, then skein_prepare
// if exported) once in the world of initWorld
// and captures its mutable globals and linear memory. The memory becomes
// m's image, replacing the image of its data segments.
func (e *wazeroEngine) snapshot(ctx context.Context, m *wazeroModule, s reactorShape) error {
	ictx, cancel, limit := initContext(ctx, e.cfg.InitTimeout)
	defer cancel()
	var stderr strings.Builder
	st := &stopped{}
	var lm experimental.LinearMemory
	ictx = withMemoryOf(context.WithValue(ictx, instanceKey{}, st), m.img, e.cfg.SliceMemory, &lm)
	mod, err := e.instantiate(ictx, m.cm, moduleConfig(initWorld(&limitedWriter{w: &stderr, n: 4096})), reactorStartUp...)
	if st.err != nil {
		err = st.err
	}
	if err != nil {
		if mod != nil {
			mod.Close(ctx)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(ictx.Err(), context.DeadlineExceeded) {
			return &InitTimeoutError{Limit: limit}
		}
		return &InvalidError{Err: fmt.Errorf("its start-up (%s) failed: %w%s", ReactorInit, err, tail(stderr.String()))}
	}
	defer mod.Close(ctx)
	snap := &snapshot{globals: map[string]uint64{}}
	for g := s.first; g < s.first+s.globals; g++ {
		name := fmt.Sprintf("%s%d", globalExportPrefix, g)
		if mg, ok := mod.ExportedGlobal(name).(api.MutableGlobal); ok {
			snap.globals[name] = mg.Get()
		}
	}
	mem := mod.Memory()
	if mem == nil {
		return &InvalidError{Err: errors.New("a reactor module must define its linear memory")}
	}
	data, _ := mem.Read(0, mem.Size())
	var img *memImage
	if mapped(lm) {
		img = snapshotImage(m.img, data) // nil: read the memory whole instead
	}
	if img == nil {
		if img, err = newMemImage(data); err != nil { // written to the image's file: no copy on the heap
			return nil // no snapshot where images cannot be made: instances run _initialize
		}
	}
	snap.pages, snap.img = mem.Size()/65536, img
	if m.img != nil {
		m.img.close()
	}
	m.img, m.snap = img, snap
	return nil
}

// runReactor instantiates a reactor module and calls its entry: from the
// snapshot when m has one, else after running _initialize.
func (e *wazeroEngine) runReactor(ctx context.Context, m *wazeroModule, cfg wazero.ModuleConfig) (api.Module, error) {
	start := reactorStartUp
	if m.snap != nil {
		start = nil
	}
	mod, err := e.instantiate(ctx, m.cm, cfg, start...)
	if err != nil {
		return mod, err
	}
	if m.snap != nil {
		if _, err := restore(mod, m.snap); err != nil {
			return mod, err
		}
	}
	return mod, e.call(ctx, mod, mod.ExportedFunction(ReactorEntry))
}

// restore gives a new instance the snapshot's globals and memory size
// (its memory already maps the snapshot's image); it returns the globals
// with their snapshot values, for a reset (wazero_recycle.go).
func restore(mod api.Module, s *snapshot) ([]globalValue, error) {
	globals := make([]globalValue, 0, len(s.globals))
	for name, v := range s.globals {
		g := mod.ExportedGlobal(name).(api.MutableGlobal)
		g.Set(v)
		globals = append(globals, globalValue{g, v})
	}
	mem := mod.Memory()
	if cur := mem.Size() / 65536; cur < s.pages {
		if _, ok := mem.Grow(s.pages - cur); !ok {
			return nil, fmt.Errorf("the module's initialised memory (%d pages of 64 KiB) exceeds the memory limit", s.pages)
		}
	}
	return globals, nil
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w interface{ WriteString(string) (int, error) }
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(l.n, len(p))
		_, _ = l.w.WriteString(string(p[:k])) // a strings.Builder: it never fails
		l.n -= k
	}
	return len(p), nil
}

// tail formats what a failed start-up wrote to stderr, if anything.
func tail(stderr string) string {
	if stderr = strings.TrimSpace(stderr); stderr == "" {
		return ""
	}
	return "; it wrote: " + stderr
}
