package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/skeinrun/skein/store"
	"github.com/skeinrun/skein/store/storetest"
)

// BenchmarkModuleInfo reads a module's record without its bytes, by hash
// and by name, with a 3 MiB module stored (a Go guest's size): the read
// that every start of a run by name makes. Its cost must not grow with
// the module's size.
func BenchmarkModuleInfo(b *testing.B) {
	for _, size := range []int{1 << 10, 3 << 20} {
		d, _ := openFile(b, Options{})
		ctx := context.Background()
		m := store.Module{Hash: fmt.Sprintf("%064d", size), Name: "mod", Bytes: make([]byte, size), ABIVersion: 1, Workflows: []string{"w"}}
		if err := d.PutModule(ctx, m); err != nil {
			b.Fatal(err)
		}
		for _, by := range []string{"hash", "name"} {
			key := map[string]string{"hash": m.Hash, "name": m.Name}[by]
			b.Run(fmt.Sprintf("size=%dKiB/by=%s", size>>10, by), func(b *testing.B) {
				for b.Loop() {
					got, err := d.ModuleInfo(ctx, key)
					if err != nil || got.Size != int64(size) {
						b.Fatalf("ModuleInfo(%s) = %+v, %v", key, got.Size, err)
					}
				}
			})
		}
		d.Close()
	}
}

// TestMigrationModuleBytes opens a database of schema 7, whose modules
// hold their bytes in the row, and checks that migration 8 keeps every
// module's bytes, size, name order and workflows.
func TestMigrationModuleBytes(t *testing.T) {
	path, raw := oldDatabase(t, 7)
	if _, err := raw.Exec(`INSERT INTO modules (hash, name, bytes, abi_version, workflows, created_at, named_seq) VALUES
	('h1', 'mod', x'0061736d01', 1, '["a"]', 1, 1),
	('h2', 'mod', x'0061736d0102', 1, '["a","b"]', 2, 2),
	('h3', '', x'', 1, '[]', 3, 0);`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	d, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, c := range []struct {
		key, hash string
		bytes     []byte
		workflows []string
	}{
		{"h1", "h1", []byte("\x00asm\x01"), []string{"a"}},
		{"mod", "h2", []byte("\x00asm\x01\x02"), []string{"a", "b"}},
		{"h3", "h3", []byte{}, nil},
	} {
		info, err := d.ModuleInfo(t.Context(), c.key)
		if err != nil || info.Hash != c.hash || info.Size != int64(len(c.bytes)) || !slices.Equal(info.Workflows, c.workflows) {
			t.Errorf("ModuleInfo(%s) = %+v, %v; want hash %s, size %d, workflows %q", c.key, info, err, c.hash, len(c.bytes), c.workflows)
		}
		m, err := d.Module(t.Context(), c.key)
		if err != nil || m.Hash != c.hash || !bytes.Equal(m.Bytes, c.bytes) {
			t.Errorf("Module(%s) = %s %x, %v; want %s %x", c.key, m.Hash, m.Bytes, err, c.hash, c.bytes)
		}
	}
	if _, err := d.ModuleInfo(t.Context(), ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ModuleInfo(\"\") = %v, want ErrNotFound (h3 has no name)", err)
	}
}

// TestMigrationModuleNames opens a database of schema 12, where a module
// had one name, and checks that migration 13 keeps every name pointing
// at the module it named.
func TestMigrationModuleNames(t *testing.T) {
	path, raw := oldDatabase(t, 12)
	for _, m := range storetest.ModuleNamesSeed {
		if _, err := raw.Exec(`INSERT INTO modules (hash, name, size, abi_version, workflows, created_at, named_seq) VALUES (?, ?, 0, 1, '[]', 1, ?)`,
			m.Hash, m.Name, m.NamedSeq); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(`INSERT INTO module_bytes (hash, bytes) VALUES (?, x'')`, m.Hash); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	d, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	storetest.CheckModuleNamesMigrated(t, d)
}
