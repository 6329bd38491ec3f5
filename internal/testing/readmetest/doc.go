// Package readmetest holds the test that runs the command blocks
// (```sh) of README.md and of every other Markdown page of the
// repository that has any, each page top to bottom in a fresh copy of the
// tree, as a new user would paste them into a fresh clone, against real
// processes (pages_test.go lists the pages and what each must print).
package readmetest
