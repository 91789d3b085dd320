// Package collect is the cluster side of a run: it lists the
// ResourceRecommends in scope and shard, resolves their targets through
// discovery and reads them with paged lists (metadata first, then the pod
// templates), notes the resources HorizontalPodAutoscalers scale on,
// validates each item with katalyst's rules and this project's extensions,
// and can write katalyst's status back.
package collect
