// Package doctor checks what a run depends on and shows why a run would
// recommend nothing: whether the apiserver, Prometheus and the repository
// answer, whether the job's identity may read what it must, each
// ResourceRecommend's validation, the PromQL a run sends with how many
// series answer, and the history each container would be computed from.
// It changes nothing.
//
// It reads history as a run does, through usage.ReadAll with
// recommend.Wants, so that the queries it shows are those a run sends:
// one read per namespace, over the longest window its ResourceRecommends
// ask for, whatever their extensions set.
package doctor
