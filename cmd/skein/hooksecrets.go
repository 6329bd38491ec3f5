package main

// skein serve --hook-secrets FILE: the named secrets webhooks are signed
// with (skein hook create --secret NAME; docs/schedules.md), read at the
// start and again on SIGHUP.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
)

// hookSecrets holds the secrets of a hook secrets file.
type hookSecrets struct {
	path string
	log  *slog.Logger
	m    atomic.Pointer[map[string]string]
}

// loadHookSecrets reads the hook secrets file at path.
func loadHookSecrets(path string, log *slog.Logger) (*hookSecrets, error) {
	s := &hookSecrets{path: path, log: log}
	if err := s.reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// lookup is host.Config.HookSecrets.
func (s *hookSecrets) lookup(name string) (string, bool) {
	v, ok := (*s.m.Load())[name]
	return v, ok
}

// reload reads the file again; on an error the secrets read before stay.
func (s *hookSecrets) reload() error {
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("--hook-secrets: %w", err)
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("--hook-secrets: %w", err)
	}
	m, err := parseHookSecrets(data)
	if err != nil {
		return fmt.Errorf("--hook-secrets %s: %w", s.path, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		s.log.Warn("skein serve: the hook secrets file can be read by other users; chmod 600 it", "file", s.path, "mode", fi.Mode().Perm().String())
	}
	s.m.Store(&m)
	s.log.Info("skein serve: read the hook secrets", "file", s.path, "secrets", len(m))
	return nil
}

// watch reads the file again at each SIGHUP until ctx ends; stop waits
// for it to have stopped.
func (s *hookSecrets) watch(ctx context.Context) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := s.reload(); err != nil {
					s.log.Error("skein serve: SIGHUP: the hook secrets were not read again; the ones read before stay", "err", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// parseHookSecrets reads a hook secrets file: a JSON object of names to
// values, or lines of NAME=VALUE (spaces around either, blank lines and
// lines starting with # left out). A name is 1 to 64 letters, digits, '.', '-' and '_'; a value
// is not empty; a name appears once.
func parseHookSecrets(data []byte) (map[string]string, error) {
	m := map[string]string{}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(t, &m); err != nil {
			return nil, fmt.Errorf("want a JSON object of names to string values: %w", err)
		}
		for name, v := range m {
			if err := checkSecretEntry(name, v); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		name, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want NAME=VALUE", n)
		}
		name, v = strings.TrimSpace(name), strings.TrimSpace(v)
		if err := checkSecretEntry(name, v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("line %d: secret %q is named twice", n, name)
		}
		m[name] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// checkSecretEntry checks one secret of a hook secrets file (never
// quoting its value).
func checkSecretEntry(name, v string) error {
	if name == "" || len(name) > 64 || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
	}) >= 0 {
		return fmt.Errorf("secret name %q: want 1 to 64 letters, digits, '.', '-' and '_'", name)
	}
	if v == "" {
		return fmt.Errorf("secret %q is empty", name)
	}
	return nil
}
