package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/skeinrun/skein/internal/taskwire"
)

// client speaks the worker protocol.
type client struct {
	base, token string
	hc          *http.Client
}

// StatusError is an error answer of the server.
type StatusError struct {
	Status  int    // the HTTP status
	Code    string // the API's error code
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("skein server: %d %s: %s", e.Status, e.Code, e.Message)
}

// post sends in to path and decodes the answer into out.
func (c *client) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("POST %s: read the answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb taskwire.ErrorBody
		if json.Unmarshal(b, &eb) != nil || eb.Error.Message == "" {
			eb.Error.Message = string(bytes.TrimSpace(b))
		}
		return &StatusError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s: decode the answer: %w", path, err)
	}
	return nil
}
