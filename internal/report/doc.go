// Package report holds the outcome of a run and prints it for people
// (a table) and for programs (JSON, documented in the README).
package report
