package main

import (
	"os"
	"path/filepath"
)

// userCompileCache is the folder where the commands that run modules on
// this machine (run, resume, check, check --upgrade) keep the machine code
// wazero compiles, so a second command on the same module does not compile
// it again: skein-wazero in the user's cache folder ($XDG_CACHE_HOME or
// ~/.cache on Linux), or "" (no cache) where there is none. wazero keys
// each entry by the module's bytes and its own version, and writes it
// whole before it is read, so processes can share the folder.
func userCompileCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "skein-wazero")
}
