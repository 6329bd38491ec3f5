package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/store"
)

// DeployReader is Deploy for a module read from r, which holds size
// bytes (an upload spooled to a file, say). It waits for a deploy slot
// (Config.MaxConcurrentDeploys) before it reads the module into memory,
// so that uploads waiting for their turn cost no memory. The record it
// returns has no Bytes; after a module of 16 MiB or more it returns the
// memory the deploy freed to the operating system at once.
func (h *Host) DeployReader(ctx context.Context, name string, r io.Reader, size int64) (store.Module, error) {
	label := moduleLabel(name)
	if err := h.checkModuleSize(label, size); err != nil {
		return store.Module{}, err
	}
	release, err := h.deploySlot(ctx, label)
	if err != nil {
		return store.Module{}, err
	}
	defer release()
	m, err := h.deployRead(ctx, name, label, r, size)
	if size >= largeModule {
		// The deploy's garbage (the module, its rewritten copies, the
		// compiler's work) is several times the module's size; the Go
		// runtime would hand it back to the OS only slowly.
		debug.FreeOSMemory()
	}
	return m, err
}

// largeModule is the size from which DeployReader frees memory at once.
const largeModule = 16 << 20

func (h *Host) deployRead(ctx context.Context, name, label string, r io.Reader, size int64) (store.Module, error) {
	wasm := make([]byte, size)
	if _, err := io.ReadFull(r, wasm); err != nil {
		return store.Module{}, fmt.Errorf("deploy %s: reading the module: %w", label, err)
	}
	m, err := h.deploy(ctx, name, label, wasm)
	m.Bytes = nil
	return m, err
}

func moduleLabel(name string) string {
	if name == "" {
		return "(unnamed)"
	}
	return name
}

func (h *Host) checkModuleSize(label string, n int64) error {
	if n == 0 {
		return &ModuleError{Module: label, Reason: "empty file"}
	}
	if n > int64(h.cfg.MaxModuleBytes) {
		return h.moduleSizeError(label, n)
	}
	return nil
}

// deploySlot waits for one of the Config.MaxConcurrentDeploys slots.
func (h *Host) deploySlot(ctx context.Context, label string) (release func(), err error) {
	select {
	case h.deploySlots <- struct{}{}:
		return func() { <-h.deploySlots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("deploy %s: waiting for a deploy slot (Config.MaxConcurrentDeploys = %d%s): %w",
			label, h.cfg.MaxConcurrentDeploys, hintSuffix(h.cfg.limitHint("MaxConcurrentDeploys")), context.Cause(ctx))
	}
}

// deploy checks the quota, compiles (with Config.CompileTimeout),
// describes and stores a module. A module rejected after it compiled
// leaves the compiled-module cache at once.
func (h *Host) deploy(ctx context.Context, name, label string, wasm []byte) (store.Module, error) {
	sum := sha256.Sum256(wasm)
	hash := hex.EncodeToString(sum[:])
	stored, err := h.checkQuota(ctx, label, hash, len(wasm))
	if err != nil {
		return store.Module{}, err
	}
	e, _, err := h.modules.Compile(ctx, label, wasm, h.cfg.CompileTimeout)
	if err != nil {
		return store.Module{}, err
	}
	wfs, schemas, err := h.describe(ctx, label, e)
	ns, local := store.SplitQualified(name)
	if local == "" {
		name = "" // "NS/": unnamed, in namespace NS
	}
	mod := store.Module{Hash: hash, Name: name, Namespace: ns, Bytes: wasm, ABIVersion: abi.Version, Workflows: wfs, InputSchemas: schemas, CreatedAt: time.Now()}
	if err == nil && !stored {
		err = h.putModule(ctx, label, mod)
	} else if err == nil {
		err = h.cfg.Store.PutModule(ctx, mod) // the name, and the namespace as an owner
	}
	if err != nil {
		h.modules.Discard(e)
		if _, ok := errors.AsType[*ModuleError](err); !ok {
			err = fmt.Errorf("deploy %s: %w", label, err)
		}
		return store.Module{}, err
	}
	h.modules.Release(e)
	m, err := h.cfg.Store.ModuleInfo(ctx, hash)
	if err != nil {
		return store.Module{}, fmt.Errorf("deploy %s: %w", label, err)
	}
	if name != "" { // the name deployed, even if another deploy named it since
		m.Name = name
	}
	m.Bytes = wasm
	return m, nil
}

// checkQuota fails when storing n more bytes would take the modules
// stored past Config.MaxStoredModuleBytes. A module already stored (by
// hash) costs nothing; stored reports it.
func (h *Host) checkQuota(ctx context.Context, label, hash string, n int) (stored bool, err error) {
	if _, err := h.cfg.Store.ModuleInfo(ctx, hash); err == nil {
		return true, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, fmt.Errorf("deploy %s: %w", label, err)
	}
	quota := h.cfg.MaxStoredModuleBytes
	if quota < 0 {
		return false, nil
	}
	ms, err := h.cfg.Store.Modules(ctx)
	if err != nil {
		return false, fmt.Errorf("deploy %s: %w", label, err)
	}
	var total int64
	for _, m := range ms {
		total += m.Size
	}
	if total+int64(n) > quota {
		le := h.cfg.limitError(fmt.Sprintf("storing the module's %d bytes would bring the modules stored to %d bytes", n, total+int64(n)), "MaxStoredModuleBytes", bytesValue(quota))
		return false, &ModuleError{Module: label, Reason: le.Error(), Err: le}
	}
	return false, nil
}

// putModule stores a new module after checking the quota again: deploys
// in this process check and store one at a time, so they cannot together
// go past it (deploys in other processes sharing the store can, by at
// most one module each).
func (h *Host) putModule(ctx context.Context, label string, m store.Module) error {
	h.quotaMu.Lock()
	defer h.quotaMu.Unlock()
	if _, err := h.checkQuota(ctx, label, m.Hash, len(m.Bytes)); err != nil {
		return err
	}
	return h.cfg.Store.PutModule(ctx, m)
}
