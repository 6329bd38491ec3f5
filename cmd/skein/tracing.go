package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/skeinrun/skein/host"
)

// skein serve's traces (docs/observability.md): exported over OTLP/HTTP
// by the OpenTelemetry SDK when --otlp-endpoint or one of the standard
// OTEL_EXPORTER_OTLP_* endpoint variables is set; off otherwise.

// otlpEnv are the variables that turn tracing on without the flag; the
// SDK reads them, and the others it knows (headers, timeout, ...) too.
var otlpEnv = []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}

// newTracerProvider returns the TracerProvider of skein serve, or nil when
// tracing is off. endpoint is --otlp-endpoint: the collector's base URL,
// to which /v1/traces is added as for OTEL_EXPORTER_OTLP_ENDPOINT.
func newTracerProvider(ctx context.Context, endpoint string, log *slog.Logger) (*sdktrace.TracerProvider, error) {
	var opts []otlptracehttp.Option
	switch {
	case endpoint != "":
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("--otlp-endpoint %q: want the collector's http:// or https:// URL, e.g. http://localhost:4318", endpoint)}
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	case !otlpEnvSet():
		return nil, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s=%s: skein serve exports traces over http/protobuf only", v, p)}
		}
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("traces: the OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(attribute.String("service.name", "skein")), resource.Environment())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("traces: the resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	log.Info("skein serve: exporting traces over OTLP/HTTP", "endpoint", endpoint)
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(host.TraceIDGenerator())), nil
}

// startTracing is newTracerProvider with the function that stops it: it
// sends the spans still batched, within the shutdown's bound (a no-op
// when tracing is off).
func startTracing(ctx context.Context, endpoint string, log *slog.Logger) (*sdktrace.TracerProvider, func(), error) {
	tp, err := newTracerProvider(ctx, endpoint, log)
	if err != nil || tp == nil {
		return nil, func() {}, err
	}
	return tp, func() {
		sctx, cancel := context.WithTimeout(ctx, shutdownTimeout)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			log.Warn("skein serve: traces not exported", "err", err)
		}
	}, nil
}

// otlpEnvSet tells whether one of the OTLP endpoint variables is set.
func otlpEnvSet() bool {
	for _, v := range otlpEnv {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}
