package host

import (
	"context"

	"github.com/skeinrun/skein/store"
)

// The read side of the client role: what a caller (the server, a CLI,
// an embedder) looks up, without reaching for the store. The write side
// is Deploy, Start, Resolve, Cancel and Await.

// Run returns the stored run id. A run that does not exist is an error
// wrapping store.ErrNotFound.
func (h *Host) Run(ctx context.Context, id string) (store.Run, error) {
	return h.cfg.Store.Run(ctx, id)
}

// Runs lists the stored runs that f selects.
func (h *Host) Runs(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	return h.cfg.Store.Runs(ctx, f)
}

// Modules lists the stored modules, without their bytes.
func (h *Host) Modules(ctx context.Context) ([]store.Module, error) {
	return h.cfg.Store.Modules(ctx)
}

// Module returns a stored module by hash, hash prefix or name, without
// its bytes. A module that does not exist is an error wrapping
// store.ErrNotFound.
func (h *Host) Module(ctx context.Context, ref string) (store.Module, error) {
	return h.cfg.Store.ModuleInfo(ctx, ref)
}

// LeaseHistory lists the leases taken on run id, oldest first.
func (h *Host) LeaseHistory(ctx context.Context, id string) ([]store.LeaseRecord, error) {
	return h.cfg.Store.LeaseHistory(ctx, id)
}
