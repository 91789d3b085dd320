// Package job runs one pass of recommend-job: collect, recommend, render,
// commit. Each stage hands the next a plain value, so a dry run is the same
// pass stopped before the commit.
package job
