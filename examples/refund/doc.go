// Package refund holds the tests of the refund workflow's two versions:
// v1 waits for a person to approve every refund, v2 approves refunds up
// to 100 itself. docs/workflows.md resumes a run of v1 with v2 (`skein resume`).
package refund
