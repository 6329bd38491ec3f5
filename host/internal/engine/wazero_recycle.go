package engine

import (
	"context"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// Recycled instances (wazero). Instantiating a Go module costs wazero
// about half a millisecond, a third of it filling the function table's
// thousands of entries, which are the same in every instance. An
// instance of a snapshotted reactor (reactor.go) whose state lives only
// in its linear memory and globals can instead be reset to the snapshot
// when a run ends and kept for the module's next run: its memory is
// mapped from the image again (the pages the run wrote are dropped), its
// mutable globals get the snapshot's values, and the next run calls
// skein_main on it as on a new instance. What the guest can observe of
// the reset instance is exactly what it observes of a new one.
//
// An instance is only reset when nothing else can carry state from one
// run to the next:
//   - the module has no instruction that writes a table or drops a
//     segment (CompileOptions.Reusable), so its tables and passive
//     segments are as instantiation made them;
//   - its memory is still the snapshot's size (wazero cannot shrink a
//     memory), mapped from the image;
//   - the instance is open and the run's context did not end during its
//     call: a guest that exited, trapped into closing or was interrupted
//     is closed and dropped.
//
// Its WASI world (clocks, random stream, output) is bound once, at
// instantiation, to the instance's world, which each run points at its
// own RunConfig.

// maxIdleInstances bounds the reset instances a module keeps. An idle
// instance holds no written pages (its memory maps the image), so each
// costs its wazero bookkeeping and reserved address space only.
const maxIdleInstances = 16

// remapper is a linear memory that can be mapped from its image again
// (memory_unix.go).
type remapper interface {
	remap(img *memImage) bool
}

// instance is an instance of a snapshotted reactor that can be reset.
type instance struct {
	mod     api.Module
	entry   api.Function
	mem     remapper // nil: the memory cannot be reset
	globals []globalValue
	world   *world
	args    []string
}

// globalValue is a mutable global and its value in the snapshot.
type globalValue struct {
	g api.MutableGlobal
	v uint64
}

// instancePool keeps a module's reset instances.
type instancePool struct {
	mu     sync.Mutex
	idle   []*instance
	closed bool
	reused atomic.Int64 // runs that ran on a reset instance
}

// get returns an idle instance for a run with args, or nil.
func (p *instancePool) get(ctx context.Context, args []string) *instance {
	p.mu.Lock()
	var inst *instance
	if n := len(p.idle); n > 0 {
		inst, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if inst != nil && (inst.mod.IsClosed() || !slices.Equal(inst.args, args)) {
		inst.mod.Close(ctx)
		return nil
	}
	return inst
}

// put resets inst to the snapshot and keeps it, or closes it when it
// cannot be reset or the pool is full or closed.
func (p *instancePool) put(ctx context.Context, inst *instance, m *wazeroModule) {
	if inst.reset(m) {
		p.mu.Lock()
		if !p.closed && len(p.idle) < maxIdleInstances {
			p.idle = append(p.idle, inst)
			inst = nil
		}
		p.mu.Unlock()
	}
	if inst != nil {
		inst.mod.Close(ctx)
	}
}

// close closes the idle instances; instances put later are closed.
func (p *instancePool) close(ctx context.Context) {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, inst := range idle {
		inst.mod.Close(ctx)
	}
}

// reset returns the instance to the state of a new instance of m (see
// above); false when it cannot.
func (inst *instance) reset(m *wazeroModule) bool {
	if inst.mem == nil || inst.mod.IsClosed() || inst.mod.Memory().Size() != m.snap.pages*65536 {
		return false
	}
	if !inst.mem.remap(m.img) {
		return false
	}
	for _, g := range inst.globals {
		g.g.Set(g.v)
	}
	return true
}

// newInstance instantiates m (a snapshotted reactor) from its snapshot,
// with its WASI world bound to a world of its own.
func (e *wazeroEngine) newInstance(ctx context.Context, m *wazeroModule, args []string) (*instance, error) {
	inst := &instance{world: &world{}, args: args}
	reserve := defaultWasmMemory != nil && !e.cfg.SliceMemory
	actx := experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
		lm := imageMemory(m.img, capacity, max, reserve)
		inst.mem, _ = lm.(remapper)
		return lm
	}))
	mod, err := e.rt.InstantiateModule(actx, m.cm, inst.world.moduleConfig(args).WithStartFunctions())
	if err != nil {
		if mod != nil {
			mod.Close(ctx)
		}
		return nil, err
	}
	inst.mod = mod
	if inst.globals, err = restore(mod, m.snap); err != nil {
		mod.Close(ctx)
		return nil, err
	}
	inst.entry = mod.ExportedFunction(ReactorEntry)
	return inst, nil
}

// runRecycled runs skein_main on a reset instance of m, or on a new one,
// and puts the instance back when the run ends.
func (e *wazeroEngine) runRecycled(ctx context.Context, m *wazeroModule, c RunConfig, s *stopped) error {
	inst := m.pool.get(ctx, c.Args)
	if inst == nil {
		var err error
		if inst, err = e.newInstance(ctx, m, c.Args); err != nil {
			return err
		}
	} else {
		m.pool.reused.Add(1)
		if c.Reused != nil {
			c.Reused()
		}
	}
	inst.world.c = c
	s.keep = true
	err := e.call(ctx, inst.mod, inst.entry)
	inst.world.c = RunConfig{}
	if ctx.Err() != nil {
		// With Config.Interruptible, wazero watches the call's ctx from a
		// goroutine of its own, which may close the instance at any moment
		// once ctx has ended during the call: never reuse it.
		inst.mod.Close(context.WithoutCancel(ctx))
		return err
	}
	m.pool.put(context.WithoutCancel(ctx), inst, m)
	return err
}

// world is what an instance's WASI functions see: the RunConfig of the
// run on the instance now. Only the goroutine running the instance reads
// or sets it.
type world struct{ c RunConfig }

// moduleConfig binds an instance's WASI world to w.
func (w *world) moduleConfig(args []string) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithArgs(args...).
		WithStdout(worldOutput{w, false}).
		WithStderr(worldOutput{w, true}).
		WithWalltime(func() (int64, int32) { return w.c.Walltime() }, 1).
		WithNanotime(func() int64 { return w.c.Nanotime() }, 1).
		WithNanosleep(func(ns int64) { w.c.Nanosleep(ns) }).
		WithOsyield(func() {}).
		WithRandSource(worldRand{w})
}

// worldOutput is the instance's stdout or stderr.
type worldOutput struct {
	w      *world
	stderr bool
}

func (o worldOutput) Write(p []byte) (int, error) {
	out := o.w.c.Stdout
	if o.stderr {
		out = o.w.c.Stderr
	}
	if out == nil {
		out = io.Discard
	}
	return out.Write(p)
}

// worldRand is the instance's random stream.
type worldRand struct{ w *world }

func (r worldRand) Read(p []byte) (int, error) { return r.w.c.Rand.Read(p) }
