package server

import (
	"cmp"
	"encoding/json"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/host"
	"github.com/skeinrun/skein/internal/runjson"
	"github.com/skeinrun/skein/store"
)

// The JSON documents of the API (docs/api.md describes each) are defined
// once, in package client, the Go client of this API. The names below
// are aliases of them, so that programs written against package server's
// names go on compiling.

// The documents of modules and runs.
type (
	// Module is client.Module: a deployed module, without its bytes.
	Module = client.Module
	// ModuleList is client.ModuleList: GET /v1/modules.
	ModuleList = client.ModuleList
	// Run is client.Run: a run record.
	Run = client.Run
	// RunList is client.RunList: GET /v1/runs.
	RunList = client.RunList
	// LeaseList is client.LeaseList: GET /v1/runs/{id}/leases.
	LeaseList = client.LeaseList
	// Lease is client.Lease: one claim of a run by a worker.
	Lease = client.Lease
	// StartRequest is client.StartRequest: the body of POST /v1/runs.
	StartRequest = client.StartRequest
	// CancelRequest is client.CancelRequest: the body of POST /v1/runs/{id}/cancel.
	CancelRequest = client.CancelRequest
	// PauseRequest is client.PauseRequest: the body of POST /v1/runs/{id}/pause.
	PauseRequest = client.PauseRequest
	// ResumeRequest is client.ResumeRequest: the body of POST /v1/runs/{id}/resume.
	ResumeRequest = client.ResumeRequest
	// ResetRequest is client.ResetRequest: the body of POST /v1/runs/{id}/reset.
	ResetRequest = client.ResetRequest
	// ResolveRequest is client.ResolveRequest: the body of POST /v1/promises/{id}.
	ResolveRequest = client.ResolveRequest
	// Resolved is client.Resolved: the answer of POST /v1/promises/{id}.
	Resolved = client.Resolved
	// ErrorBody is client.ErrorBody: every error answer.
	ErrorBody = client.ErrorBody
	// ErrorDetail is client.ErrorDetail: the error of an ErrorBody.
	ErrorDetail = client.ErrorDetail
	// ActivityTask is client.ActivityTask: a remote activity call of a run.
	ActivityTask = client.ActivityTask
	// TaskList is client.TaskList: GET /v1/runs/{id}/tasks.
	TaskList = client.TaskList
)

// Error codes: the client.Code values, as strings.
const (
	CodeBadRequest           = string(client.CodeBadRequest)
	CodeInvalidModule        = string(client.CodeInvalidModule)
	CodeUnauthorized         = string(client.CodeUnauthorized)
	CodeNotFound             = string(client.CodeNotFound)
	CodeMethodNotAllowed     = string(client.CodeMethodNotAllowed)
	CodeConflict             = string(client.CodeConflict)
	CodeTooLarge             = string(client.CodeTooLarge)
	CodeModuleLimit          = string(client.CodeModuleLimit)   // 422: a module over a structure limit or the compile deadline
	CodeQuotaExceeded        = string(client.CodeQuotaExceeded) // 507: the quota on stored modules
	CodeInternal             = string(client.CodeInternal)
	CodeUnavailable          = string(client.CodeUnavailable)
	CodeForbidden            = string(client.CodeForbidden)            // a browser request from a page of another origin
	CodeUnsupportedMediaType = string(client.CodeUnsupportedMediaType) // a write whose Content-Type is not the endpoint's
	CodeMisdirected          = string(client.CodeMisdirected)          // without a token, a Host that is not this server
	CodeRequestTimeout       = string(client.CodeRequestTimeout)       // a request body that did not arrive in time
	// CodeInsufficientStorage (HTTP 507): the database is full (its disk,
	// or its size limit); the message names it. Nothing was written.
	CodeInsufficientStorage = string(client.CodeInsufficientStorage)
)

func moduleJSON(m store.Module) Module {
	wfs := m.Workflows
	if wfs == nil {
		wfs = []string{}
	}
	names := m.Names
	if names == nil {
		names = []string{}
	}
	return Module{Hash: m.Hash, Name: m.Name, Names: names, ABIVersion: m.ABIVersion, Workflows: wfs, CreatedAt: m.CreatedAt.UTC()}
}

func runJSON(r store.Run) Run {
	v := Run{ID: r.ID, Module: r.ModuleHash, Workflow: r.Workflow, Status: string(r.Status),
		Error: r.Error, Parent: r.Parent, CancelReason: r.Cancel,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if len(r.Input) > 0 {
		v.Input = json.RawMessage(r.Input)
	}
	if len(r.Result) > 0 {
		v.Result = json.RawMessage(r.Result)
	}
	v.ContinuedFrom = host.ContinuedFromID(r.ID)
	if r.Status == store.RunContinued {
		v.ContinuedAs = host.ContinuedRunID(r.ID)
	}
	v.ResetTo, v.ResetFrom, v.ResetKey = r.ResetTo, r.ResetFrom, r.ResetKey
	if r.Parent != "" {
		v.ParentClose, v.Abandoned = string(cmp.Or(r.ParentClose, store.ParentCloseCancel)), r.Abandoned
	}
	if r.LeaseOwner != "" {
		v.Worker = r.LeaseOwner
		v.LeaseExpiry = unixTimeOf(r.LeaseExpiry)
	}
	v.Paused = runjson.PauseOf(r)
	return v
}

func leaseJSON(l store.LeaseRecord) Lease {
	return Lease{Worker: l.Owner, Token: l.Token, ClaimedAt: nsTime(l.ClaimedAt), Expiry: nsTime(l.Expiry),
		ReleasedAt: unixTimeOf(l.ReleasedAt), EndedAt: nsTime(l.End())}
}

// nsTime is a unix ns time in UTC.
func nsTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// unixTimeOf is nsTime(ns), or nil for 0.
func unixTimeOf(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := nsTime(ns)
	return &t
}

func activityTaskJSON(t store.Task) ActivityTask {
	a := ActivityTask{Key: t.Key, Name: t.Name, Attempt: t.Attempt, State: string(t.State), Worker: t.Owner,
		ClaimedAt: unixTimeOf(t.ClaimedAt), Heartbeat: unixTimeOf(t.Heartbeat), LastError: t.LastError,
		Progress: t.Progress, CreatedAt: t.CreatedAt.UTC()}
	if t.State == store.TaskClaimed {
		a.Expiry = unixTimeOf(t.Expiry)
	}
	if t.State == store.TaskQueued && t.VisibleAt > time.Now().UnixNano() {
		a.VisibleAt = unixTimeOf(t.VisibleAt)
	}
	return a
}
