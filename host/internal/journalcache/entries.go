package journalcache

import (
	"bytes"
	"container/list"
	"slices"
	"time"

	"github.com/skeinrun/skein/store"
)

// The journal cache's bookkeeping (cache.go has the reasoning):
// leases claimed and released, commits applied, entries kept within the
// byte budget.

// outcomeOverhead approximates the bytes of a store.Outcome besides its
// strings and byte slices, and of its index entry.
const outcomeOverhead = 200

// journalOverhead approximates the bytes of a kept journal besides its
// outcomes (its entry, list element and maps), so that the budget bounds
// the number of journals too, empty ones included.
const journalOverhead = 512

// lease is a lease this host holds, with the commits of its run seen
// under it: gen counts their starts and ends, inflight those not ended.
// expiry is the lease's end as claimed or last renewed (unix ns).
type lease struct {
	token, gen, expiry int64
	inflight           int
}

// claimed notes lease l: the run's journal in memory follows it if it was
// read or kept under the lease just before.
func (c *cache) claimed(l store.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[l.RunID] = &lease{token: l.Token, expiry: l.Expiry}
	if e := c.entries[l.RunID]; e != nil && !e.final {
		if e.token == l.Token-1 {
			e.token = l.Token
		} else if e.token != l.Token {
			c.drop(e)
		}
	}
}

// renewed notes lease l's new expiry.
func (c *cache) renewed(l store.Lease, expiry int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.held[l.RunID]; h != nil && h.token == l.Token {
		h.expiry = expiry
	}
}

// released forgets lease l; the journal stays, for the run's next claim.
func (c *cache) released(l store.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.held[l.RunID]; h != nil && h.token == l.Token {
		delete(c.held, l.RunID)
	}
}

// committing counts a commit of b's fenced run before it is made, so that
// a read of the store that races it does not keep what it read.
func (c *cache) committing(b store.Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b.Fence == nil {
		return
	}
	if h := c.held[b.Fence.RunID]; h != nil && h.token == b.Fence.Token {
		h.gen++
		h.inflight++
	}
}

// committed applies the outcomes of b, committed if ok, to the journal in
// memory of its fenced run, and drops every journal it cannot vouch for:
// any after a failed commit, those of other runs b writes or creates, and
// that of a run b ends.
func (c *cache) committed(b store.Batch, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var run string
	var token int64
	if b.Fence != nil {
		run, token = b.Fence.RunID, b.Fence.Token
	}
	if h := c.held[run]; h != nil && h.token == token {
		h.gen++
		h.inflight--
		if b.Release || !ok {
			delete(c.held, run) // a failed release may or may not have released
		}
	}
	for i := range b.Outcomes {
		if id := b.Outcomes[i].RunID; id != run {
			c.dropRun(id)
		}
	}
	for i := range b.Creates {
		c.dropRun(b.Creates[i].ID)
	}
	e := c.entries[run]
	if e == nil {
		return
	}
	if e.final {
		return // the store refused b if it wrote e's outcomes
	}
	end := ends(b, run)
	if !ok || e.token != token || end != "" && !end.Final() {
		c.drop(e) // a failed run is not replayed by a drive
		return
	}
	for i := range b.Outcomes {
		d, ok := e.upsert(b.Outcomes[i].Outcome)
		if !ok {
			c.drop(e)
			return
		}
		e.bytes += d
		c.size += d
	}
	if end.Final() {
		// The journal is closed (store.Batch) and kept, first out: a
		// verifying replay of the run may read it, a drive never will.
		e.final = true
		c.lru.MoveToBack(e.elem)
	} else {
		c.lru.MoveToFront(e.elem)
	}
	c.trim()
}

// ends returns the status b ends run with; "" if b does not end it.
func ends(b store.Batch, run string) store.RunStatus {
	for i := range b.Runs {
		if b.Runs[i].ID == run && b.Runs[i].Status.Terminal() {
			return b.Runs[i].Status
		}
	}
	return ""
}

// get returns a copy of the journal of run if this host holds the run's
// lease, unexpired, and the journal in memory follows it (ok). (A lease
// that expired may have been taken by another worker, which may have
// written the journal since.) Otherwise it returns
// the token of the lease the host holds and the count of its commits, for
// put (token 0: the read is not to be kept).
func (c *cache) get(run string) (outs []store.Outcome, token, gen int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[run]; e != nil && e.final {
		return e.copyOut(&c.lru), 0, 0, true
	}
	h := c.held[run]
	if h == nil || h.inflight > 0 || c.now() >= h.expiry {
		return nil, 0, 0, false
	}
	e := c.entries[run]
	if e == nil || e.token != h.token {
		return nil, h.token, h.gen, false
	}
	return e.copyOut(&c.lru), 0, 0, true
}

// getFinal returns the journal of run if it is kept closed (final): the
// kept slice itself, not a copy, for a caller that only reads it. A
// closed journal is never written again (store.Batch), so nothing
// changes the slice once it is sorted here.
func (c *cache) getFinal(run string) ([]store.Outcome, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[run]
	if e == nil || !e.final {
		return nil, false
	}
	return slices.Clip(e.inOrder(&c.lru)), true
}

// copyOut returns a copy of e's journal in store.CompareJournal order and
// marks e used in lru.
func (e *keptJournal) copyOut(lru *list.List) []store.Outcome {
	return slices.Clone(e.inOrder(lru))
}

// inOrder sorts e's journal in store.CompareJournal order, if it is not
// yet, marks e used in lru and returns the journal.
func (e *keptJournal) inOrder(lru *list.List) []store.Outcome {
	if !e.sorted {
		slices.SortFunc(e.outs, store.CompareJournal)
		for i := range e.outs {
			e.byKey[e.outs[i].Key] = i
		}
		e.sorted = true
	}
	lru.MoveToFront(e.elem)
	return e.outs
}

// put keeps outs, read from the store under lease token, as the run's
// journal, unless the lease ended or a commit of the run started since
// the read began (gen is the count get returned).
func (c *cache) put(run string, token, gen int64, outs []store.Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.held[run]; h == nil || h.token != token || h.gen != gen {
		return
	}
	c.keep(&keptJournal{run: run, token: token}, outs)
}

// putFinal keeps outs, read from the store after run was read final, as
// its closed journal (store.Batch): it never changes again.
func (c *cache) putFinal(run string, outs []store.Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep(&keptJournal{run: run, final: true}, outs)
}

// keep makes e, with outs, the journal of e.run. The caller holds mu.
func (c *cache) keep(e *keptJournal, outs []store.Outcome) {
	c.dropRun(e.run)
	e.outs, e.byKey, e.sorted, e.bytes = make([]store.Outcome, 0, len(outs)), make(map[string]int, len(outs)), true, journalOverhead
	for _, o := range outs {
		e.byKey[o.Key] = len(e.outs)
		e.outs = append(e.outs, keepOutcome(o))
		e.bytes += outcomeBytes(&o)
	}
	if e.bytes > c.max {
		return
	}
	c.entries[e.run] = e
	c.size += e.bytes
	e.elem = c.lru.PushFront(e)
	c.trim()
}

// dropRun removes the journal of run, if any.
func (c *cache) dropRun(run string) {
	if e := c.entries[run]; e != nil {
		c.drop(e)
	}
}

// drop removes e.
func (c *cache) drop(e *keptJournal) {
	delete(c.entries, e.run)
	c.lru.Remove(e.elem)
	c.size -= e.bytes
}

// trim drops the least recently used journals until the cache is within
// its budget.
func (c *cache) trim() {
	for c.size > c.max && c.lru.Len() > 0 {
		c.drop(c.lru.Back().Value.(*keptJournal))
	}
}

// upsert applies o as the store does (store.MergeOutcome) and returns
// the change of e's bytes; ok is false where the journal cannot know the
// stored result (an outcome without UpdatedAt gets the store's clock).
func (e *keptJournal) upsert(o store.Outcome) (delta int64, ok bool) {
	if o.UpdatedAt.IsZero() {
		return 0, false
	}
	i, exists := e.byKey[o.Key]
	if !exists {
		e.byKey[o.Key] = len(e.outs)
		e.outs = append(e.outs, keepOutcome(o))
		e.sorted = false
		return outcomeBytes(&o), true
	}
	merged, ok := store.MergeOutcome(e.outs[i], o)
	if !ok {
		return 0, true
	}
	if merged.Seq != e.outs[i].Seq {
		e.sorted = false
	}
	delta = outcomeBytes(&merged) - outcomeBytes(&e.outs[i])
	e.outs[i] = keepOutcome(merged)
	return delta, true
}

// outcomeBytes approximates the memory o takes in a journal.
func outcomeBytes(o *store.Outcome) int64 {
	return outcomeOverhead + int64(2*len(o.Key)+len(o.Kind)+len(o.Function)+len(o.Value)+len(o.Error)+len(o.Schema))
}

// keepOutcome is o with its own bytes and its time as a store returns it.
func keepOutcome(o store.Outcome) store.Outcome {
	o.Value = bytes.Clone(o.Value)
	o.Schema = bytes.Clone(o.Schema)
	o.UpdatedAt = time.Unix(0, o.UpdatedAt.UnixNano())
	return o
}

// forget drops the journals of runs and the leases held on them, if
// any: runs reset or deleted.
func (c *cache) forget(runs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range runs {
		delete(c.held, r)
		c.dropRun(r)
	}
}
