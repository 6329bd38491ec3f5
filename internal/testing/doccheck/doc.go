// Package doccheck holds the tests that keep the repository's docs true
// to the tree: every relative link and every repository path a Markdown
// page or a Go comment names exists, every #anchor and every section a
// text cites by name ("docs/design.md, \"Ids\"", "abi/README.md §1.1")
// names a heading, no page links outside the repository,
// docs/workflows.md lists everything the Go guest SDK exports, and
// docs/design.md's layout table has a row for every package with the
// packages it imports, as `go list` says.
package doccheck
