// Package readmetest holds the test that runs every command block of the
// repository's README.md in order, as a new user would paste them into a
// fresh clone.
package readmetest
