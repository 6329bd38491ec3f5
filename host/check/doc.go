// Package check is skein's checker, what `skein check` and package
// skeintest run. Module checks a workflow before any run of it is
// durable: it runs the workflow under many seeded schedules and replays
// each schedule's run from every crash point of its journal, so that
// nondeterminism and ids that depend on timing fail the check instead of
// a recovery. Upgrade checks new code against the live runs of a store:
// it replays each from its journal against the new module and reports
// which would break on a resume. docs/checking.md and docs/upgrades.md
// are the guide.
//
// A check runs on a host of its own (host.New with a host.Simulation,
// against an in-memory store) and reaches that host's internals through
// host/internal/checklink.
package check
