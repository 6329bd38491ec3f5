package exec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/sched"
	"github.com/skeinrun/skein/store"
)

// The attrs op (abi.OpAttrs, skein.SetAttributes): the host checks the
// values against the declarations and settles the op at once. Live, the
// values go into the batch that records the op, so they are committed
// with it; on replay the recorded op settles it and nothing is written.
// The op's function is "attrs:" and a digest of its values, so a replay
// that sets other values reaches a code mismatch at the op's key.

// attrsFn is the recorded function of an attrs op with the canonical
// values canon.
func attrsFn(canon []byte) string {
	sum := sha256.Sum256(canon)
	return "attrs:" + hex.EncodeToString(sum[:8])
}

// attrsArg reads the op's argument: a JSON object of values by name. It
// returns the values (numbers as json.Number) and their canonical JSON
// (keys sorted).
func attrsArg(arg []byte) (map[string]any, []byte, error) {
	d := json.NewDecoder(bytes.NewReader(arg))
	d.UseNumber()
	var vs map[string]any
	if err := d.Decode(&vs); err != nil || vs == nil || d.More() {
		return nil, nil, fmt.Errorf("the argument of an attrs op is a JSON object of values by name, got %.60q", arg)
	}
	canon, err := json.Marshal(vs)
	if err != nil {
		return nil, nil, err
	}
	return vs, canon, nil
}

// attrsOp issues an attrs op and settles it.
func (x *Exec) attrsOp(ctx context.Context, a opArgs) (abi.OpResult, error) {
	if err := x.checkPayload(len(a.arg), func() string { return "the argument of an attrs op" }); err != nil {
		return abi.OpResult{}, err
	}
	vs, canon, err := attrsArg(a.arg)
	if err != nil {
		return abi.OpResult{}, x.fail("%v", err)
	}
	if o, ok := x.nextOpts[a.tid]; ok {
		delete(x.nextOpts, a.tid)
		if err := x.checkOpts(a.kind, o); err != nil {
			return abi.OpResult{}, err
		}
	}
	fn := attrsFn(canon)
	res, err := x.S.Op(a.tid, a.kind.String(), a.name, fn)
	if err != nil {
		return abi.OpResult{}, err
	}
	x.fx.issued(res.Key, a.kind.String(), fn, a.tid)
	if res.New {
		x.opIssued(res.Key)
	}
	r := abi.OpResult{Promise: uint32(res.Promise), Key: res.Key, State: abi.StatePending}
	if res.Settled {
		r.State, r.Outcome = abi.StateSettled, ToABI(res.Outcome)
		return r, nil
	}
	if wait, err := x.unsettled(a.kind, fn, res); err != nil || wait {
		return r, err
	}
	out, err := x.setAttrs(ctx, vs)
	if err != nil {
		return abi.OpResult{}, x.fail("attrs op at key %q: %v", res.Key, err)
	}
	x.S.SettleNow(res.Promise, out)
	r.State, r.Outcome = abi.StateSettled, ToABI(out)
	return r, nil
}

// setAttrs checks the values against the declarations and queues them
// with the run's next commit: the op's outcome is the values as stored,
// or, for an undeclared name or a wrong type, the error (the workflow's
// code gets it). An error is the store's: the declarations could not be
// read. Under a simulation (skein check) no declarations exist: each
// value is taken with the type it has (simAttrs).
func (x *Exec) setAttrs(ctx context.Context, vs map[string]any) (sched.Outcome, error) {
	var decls []store.AttrDecl
	if x.h.Simulator() != nil {
		decls = simAttrs(vs)
	} else {
		var err error
		x.blocking(func() { decls, err = x.h.Config().Store.Attrs(ctx) })
		if err != nil {
			return sched.Outcome{}, fmt.Errorf("read the attribute declarations: %w", err)
		}
	}
	// The names are the run's namespace's (store/namespace.go); the
	// journal records them as the workflow gave them.
	ns := store.NamespaceOf(x.rs.Run.ID)
	if x.h.Simulator() != nil {
		ns = store.DefaultNamespace
	}
	typed, err := store.TypedAttrs(declsIn(ns, decls), vs)
	if err != nil {
		return errOutcome(err.Error()), nil
	}
	x.rs.Batch.Attrs = append(x.rs.Batch.Attrs, store.RunAttrs{RunID: x.rs.Run.ID, Values: qualifyNames(ns, typed)})
	return sched.Outcome{OK: true, Value: store.AttrsJSON(typed)}, nil
}

// declsIn returns the declarations of namespace ns, named locally.
func declsIn(ns string, decls []store.AttrDecl) []store.AttrDecl {
	var out []store.AttrDecl
	for _, d := range decls {
		if dns, local := store.SplitQualified(d.Name); dns == ns {
			d.Name = local
			out = append(out, d)
		}
	}
	return out
}

// qualifyNames returns vs with its names qualified by namespace ns.
func qualifyNames[T any](ns string, vs map[string]T) map[string]T {
	if ns == store.DefaultNamespace {
		return vs
	}
	out := make(map[string]T, len(vs))
	for k, v := range vs {
		out[store.Qualify(ns, k)] = v
	}
	return out
}

// simAttrs declares each value with the type of its JSON form: a bool,
// an integer as int, another number as float, a string as string.
func simAttrs(vs map[string]any) []store.AttrDecl {
	ds := make([]store.AttrDecl, 0, len(vs))
	for name, v := range vs {
		t := store.AttrString
		switch v := v.(type) {
		case bool:
			t = store.AttrBool
		case json.Number:
			t = store.AttrFloat
			if _, err := v.Int64(); err == nil {
				t = store.AttrInt
			}
		}
		ds = append(ds, store.AttrDecl{Name: name, Type: t})
	}
	return ds
}
