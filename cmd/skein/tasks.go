package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/skeinrun/skein/server"
)

// tasks reads a run's remote activity calls.
func (c *apiClient) tasks(ctx context.Context, id string) (server.TaskList, error) {
	var l server.TaskList
	_, err := c.doJSON(ctx, "GET", "/v1/runs/"+url.PathEscape(id)+"/tasks", nil, &l)
	return l, err
}

// printPendingTasks prints the run's remote activity calls that have not
// ended: queued (waiting for a worker, or for a retry's backoff) or
// claimed (which worker, since when, its last heartbeat), each with the
// previous attempt's error.
func printPendingTasks(w io.Writer, l server.TaskList) {
	for _, t := range l.Tasks {
		var where string
		switch t.State {
		case "queued":
			where = "waiting for a worker"
			if t.VisibleAt != nil {
				where = "retry at " + t.VisibleAt.Format(time.RFC3339Nano)
			}
		case "claimed":
			where = "held by " + printable(t.Worker)
			if t.ClaimedAt != nil {
				where += " since " + t.ClaimedAt.Format(time.RFC3339Nano)
			}
			if t.Heartbeat != nil {
				where += ", last heartbeat " + t.Heartbeat.Format(time.RFC3339Nano)
			}
		default:
			continue
		}
		fmt.Fprintf(w, "pending activity %s (key %s): attempt %d, %s\n", printable(t.Name), printable(t.Key), t.Attempt, where)
		if t.LastError != "" {
			fmt.Fprintf(w, "  last error: %s\n", printable(t.LastError))
		}
	}
}
