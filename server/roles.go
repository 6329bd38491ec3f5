package server

// routeRoles is the least role that may call each route, by the mux
// pattern it is registered under (a.routes). A route without an entry
// needs root (TestRouteRolesCoverRoutes fails for one). Every GET needs
// read but the keys' list; the writes are run (a run's life), deploy
// (what runs: modules, schedules, hooks, attributes), worker (the task
// protocol), admin (keys, batches, prune, deleting a run) or root.
var routeRoles = map[string]Role{
	"GET /{$}":              RoleRead, // the UI's files are served to anyone (isUI)
	"GET /ui/":              RoleRead,
	"GET /v1/openapi.json":  RoleRead,
	"GET /metrics":          RoleRead,
	"GET /v1/modules":       RoleRead,
	"GET /v1/modules/{ref}": RoleRead,
	"POST /v1/modules":      RoleDeploy,

	"GET /v1/runs":                 RoleRead,
	"GET /v1/runs/{id}":            RoleRead,
	"GET /v1/runs/{id}/outcomes":   RoleRead,
	"GET /v1/runs/{id}/ops":        RoleRead,
	"GET /v1/runs/{id}/leases":     RoleRead,
	"GET /v1/runs/{id}/tasks":      RoleRead, // and worker (workerReads)
	"POST /v1/runs":                RoleRun,
	"POST /v1/runs/{id}/cancel":    RoleRun,
	"POST /v1/runs/{id}/reset":     RoleRun,
	"POST /v1/runs/{id}/pause":     RoleRun,
	"POST /v1/runs/{id}/unpause":   RoleRun,
	"POST /v1/runs/{id}/resume":    RoleRun,
	"POST /v1/promises/{id}":       RoleRun,
	"POST /v1/runs/prune":          RoleAdmin,
	"DELETE /v1/runs/{id}":         RoleAdmin,
	"GET /v1/batches":              RoleRead,
	"GET /v1/batches/{id}":         RoleRead,
	"POST /v1/batches":             RoleAdmin,
	"POST /v1/batches/{id}/cancel": RoleAdmin,

	"GET /v1/attributes":                RoleRead,
	"POST /v1/attributes":               RoleDeploy,
	"DELETE /v1/attributes/{name}":      RoleDeploy,
	"GET /v1/schedules":                 RoleRead,
	"GET /v1/schedules/{name}":          RoleRead,
	"POST /v1/schedules":                RoleDeploy,
	"DELETE /v1/schedules/{name}":       RoleDeploy,
	"POST /v1/schedules/{name}/pause":   RoleDeploy,
	"POST /v1/schedules/{name}/resume":  RoleDeploy,
	"POST /v1/schedules/{name}/trigger": RoleDeploy,
	"GET /v1/hooks":                     RoleRead,
	"GET /v1/hooks/{name}":              RoleRead,
	"POST /v1/hooks":                    RoleDeploy,
	"DELETE /v1/hooks/{name}":           RoleDeploy,
	"POST /v1/hooks/{name}":             RoleRead, // public (a delivery checks its own signature): never checked

	"POST /v1/tasks/claim":     RoleWorker,
	"POST /v1/tasks/heartbeat": RoleWorker,
	"POST /v1/tasks/complete":  RoleWorker,
	"POST /v1/tasks/fail":      RoleWorker,
	"POST /v1/tasks/stream":    RoleWorker,

	"GET /v1/namespaces":                    RoleRead, // a key's own namespace only (records)
	"GET /v1/namespaces/{name}":             RoleRead,
	"POST /v1/namespaces":                   RoleRoot,
	"PATCH /v1/namespaces/{name}":           RoleRoot,
	"DELETE /v1/namespaces/{name}":          RoleRoot,
	"POST /v1/namespaces/{ns}/hooks/{name}": RoleRead, // public, as POST /v1/hooks/{name}

	"GET /v1/keys":              RoleAdmin, // labels and roles of keys: not for read
	"POST /v1/keys":             RoleAdmin,
	"POST /v1/keys/{id}/revoke": RoleAdmin,
	"POST /v1/keys/{id}/rotate": RoleAdmin,
}

// workerReads are the reads a worker key may make besides the task
// protocol: its tasks.
var workerReads = map[string]bool{"GET /v1/runs/{id}/tasks": true}

// rank orders the roles but worker, which is apart (0).
var rank = map[Role]int{RoleRead: 1, RoleRun: 2, RoleDeploy: 3, RoleAdmin: 4, RoleRoot: 5}

// needs returns the least role that may call the route of pattern.
func needs(pattern string) Role {
	if r, ok := routeRoles[pattern]; ok {
		return r
	}
	return RoleRoot
}

// allows reports whether role may call the route of pattern. Admin
// includes worker; a worker key only the task protocol and workerReads.
func allows(role Role, pattern string) bool {
	need := needs(pattern)
	switch {
	case role == RoleRoot:
		return true
	case role == RoleWorker:
		return need == RoleWorker || workerReads[pattern]
	case need == RoleWorker:
		return role == RoleAdmin
	}
	return rank[role] > 0 && rank[role] >= rank[need]
}

// forbiddenRoute is the 403 of a principal whose role may not call the
// route of pattern.
func forbiddenRoute(p Principal, pattern string) error {
	key := "the principal"
	if p.KeyID != "" {
		key = "key " + p.KeyID
	}
	return forbidden("%s needs role %s (or one above it); %s has role %s", pattern, needs(pattern), key, p.Role)
}
