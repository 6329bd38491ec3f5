package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
	"github.com/skeinrun/skein/server"
)

// A run of a workflow that waits for an approval: deploy its module,
// start it, wait until it asks for the approval, settle the promise, and
// wait for its result. The workflow (testdata/workflows/server, "waiter")
// is
//
//	v, err := skein.Promise[string](ctx, skein.ID("approve")).Get(ctx)
//	…
//	return skein.Step(ctx, "approved", func(*skein.StepContext) (string, error) { return "approved: " + v, nil })
func Example() {
	url, wasmFile, stop, err := exampleServer() // a skein serve in this process
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx := context.Background()

	c, err := client.New(url, client.WithToken("s3cret"))
	if err != nil {
		fmt.Println(err)
		return
	}
	wasm, err := os.ReadFile(wasmFile)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, _, err := c.Deploy(ctx, "approvals", wasm)
	if err != nil {
		fmt.Println("deploy:", err)
		return
	}
	run, _, err := c.Start(ctx, client.StartRequest{Module: m.Name, Workflow: "waiter", ID: "order-7"})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	v, err := c.Wait(ctx, run.ID, client.WaitOptions{Issued: "approve"})
	if err != nil {
		fmt.Println("wait:", err)
		return
	}
	fmt.Println("waiting on", v.Waiting.Promises[0].ID)

	res, err := c.ResolveValue(ctx, "order-7.approve", "yes")
	if err != nil {
		fmt.Println("resolve:", err)
		return
	}
	fmt.Println("promise", res.Promise, res.Status)
	if _, err := c.ResolveValue(ctx, "order-7.approve", "no"); client.IsConflict(err) {
		fmt.Println("settled once: the second answer is refused")
	}

	v, err = c.Wait(ctx, run.ID, client.WaitOptions{})
	if err != nil {
		fmt.Println("wait:", err)
		return
	}
	fmt.Println(v.Status, string(v.Result))
	// Output:
	// waiting on order-7.approve
	// promise order-7.approve ok
	// settled once: the second answer is refused
	// completed "approved: yes"
}

// exampleServer starts a server with token s3cret in a temporary folder
// and builds the example's module.
func exampleServer() (url, wasmFile string, stop func(), err error) {
	wasmFile, err = wasmbuild.BuildErr(serverWorkflows)
	if err != nil {
		return "", "", nil, err
	}
	dir, err := os.MkdirTemp("", "skein-client-example-")
	if err != nil {
		return "", "", nil, err
	}
	s, err := startServer(dir, server.Options{Token: "s3cret"})
	if err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	return s.URL, wasmFile, func() { s.stop(); os.RemoveAll(dir) }, nil
}
