package client

import (
	"context"
	"net/http"
	"time"
)

// Search attributes are typed values a run carries, each of an attribute
// declared first (docs/operations.md, "Search attributes").

// AttributeRequest is the body of POST /v1/attributes.
type AttributeRequest struct {
	Name string `json:"name"` // required: letters, digits and - _ : @, starting with a letter
	Type string `json:"type"` // required: string, int, float, bool or time
}

// Attribute is a declared search attribute.
type Attribute struct {
	Name      string    `json:"name"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
}

// AttributeList answers GET /v1/attributes.
type AttributeList struct {
	Attributes []Attribute `json:"attributes"` // by name
}

// CreateAttribute declares a search attribute (POST /v1/attributes). A
// bad name or type is an *Error with CodeBadRequest, a declared name one
// with CodeConflict.
func (c *Client) CreateAttribute(ctx context.Context, req AttributeRequest) (Attribute, error) {
	var a Attribute
	_, err := c.post(ctx, "/v1/attributes", req, &a)
	return a, err
}

// Attributes lists the declared search attributes by name
// (GET /v1/attributes).
func (c *Client) Attributes(ctx context.Context) ([]Attribute, error) {
	var l AttributeList
	err := c.get(ctx, "/v1/attributes", &l)
	return l.Attributes, err
}

// DeleteAttribute deletes a declaration and every run's value of it
// (DELETE /v1/attributes/{name}).
func (c *Client) DeleteAttribute(ctx context.Context, name string) error {
	_, err := c.call(ctx, http.MethodDelete, "/v1/attributes/"+esc(name), nil, nil)
	return err
}
