// Package kinds is what the job knows of workload kinds, in one place:
// which kinds always have a pod template and where it is, which take it from
// another object, and how the pods they create are named. Collect reads
// live objects with it, usage attributes pods with it, and render finds the
// containers of manifests with it. A pod template's print (PodPrint), read
// from the live object by collect and from a built manifest by render, is
// how a source is told to be the one the cluster runs.
package kinds

import (
	"regexp"
	"strings"
)

// Kind is one workload kind the job knows.
type Kind struct {
	Group, Kind string
	// PodSpec is the path of the pod spec in the object.
	PodSpec []string
	// TemplateRef, when set, is the path of a reference (apiVersion, kind,
	// name) to another object in the same namespace that holds the pod
	// template when this one has none of its own: an Argo Rollout's
	// spec.workloadRef.
	TemplateRef []string
	// pods is how the kind names its pods.
	pods naming
}

// naming is a pod naming scheme.
type naming int

const (
	// <name>-<5 random>: DaemonSet, ReplicaSet, Job, ReplicationController.
	suffixed naming = iota
	// <name>-<pod-template-hash>-<5 random>: a ReplicaSet's pods, named
	// after the Deployment (or Rollout) that made it.
	hashed
	// <name>-<ordinal>.
	ordinal
	// <name>-<scheduled time in minutes>-<5 random>: a Job's pods, named
	// after the CronJob that made it.
	scheduled
)

var (
	template    = []string{"spec", "template", "spec"}
	jobTemplate = []string{"spec", "jobTemplate", "spec", "template", "spec"}
)

// known are the built-in kinds, and Argo Rollouts, which always have a pod
// template (a Rollout, or the object its workloadRef names).
var known = []Kind{
	{Group: "apps", Kind: "Deployment", PodSpec: template, pods: hashed},
	{Group: "apps", Kind: "StatefulSet", PodSpec: template, pods: ordinal},
	{Group: "apps", Kind: "DaemonSet", PodSpec: template, pods: suffixed},
	{Group: "apps", Kind: "ReplicaSet", PodSpec: template, pods: suffixed},
	{Group: "batch", Kind: "Job", PodSpec: template, pods: suffixed},
	{Group: "batch", Kind: "CronJob", PodSpec: jobTemplate, pods: scheduled},
	{Group: "", Kind: "ReplicationController", PodSpec: template, pods: suffixed},
	// A Rollout's ReplicaSets are named like a Deployment's, after the
	// Rollout, also when it takes its template from a workloadRef.
	{Group: "argoproj.io", Kind: "Rollout", PodSpec: template, TemplateRef: []string{"spec", "workloadRef"}, pods: hashed},
}

// Lookup returns the kind of group and kind, if the job knows it.
func Lookup(group, kind string) (Kind, bool) {
	for _, k := range known {
		if k.Group == group && k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}

// Known reports whether group and kind is a kind that always has a pod
// template: a target of it without containers is malformed, while another
// kind without a template is one the job cannot handle.
func Known(group, kind string) bool {
	_, ok := Lookup(group, kind)
	return ok
}

// WithoutTemplate reports whether group and kind is a kind known to have
// no pod template without reading an object of it: a built-in kind the
// job does not know (a ConfigMap, a Secret). A built-in group is the core
// group, a group without a dot (apps, batch, policy) or one under k8s.io;
// a custom resource's group always has a dot and cannot be under k8s.io.
func WithoutTemplate(group, kind string) bool {
	builtin := !strings.Contains(group, ".") || group == "k8s.io" || strings.HasSuffix(group, ".k8s.io")
	return builtin && !Known(group, kind)
}

// PodSpecPaths returns where to look for the pod spec of an object of
// group and kind, in the order to try: the known kind's path, or, for any
// other kind (a custom one shaped alike), spec.template.spec, then a
// CronJob-like spec.jobTemplate.spec.template.spec.
func PodSpecPaths(group, kind string) [][]string {
	if k, ok := Lookup(group, kind); ok {
		return [][]string{k.PodSpec}
	}
	return [][]string{template, jobTemplate}
}

// PodSpecPathsText describes PodSpecPaths for messages:
// "spec.template.spec or spec.jobTemplate.spec.template.spec".
func PodSpecPathsText(group, kind string) string {
	var out []string
	for _, p := range PodSpecPaths(group, kind) {
		out = append(out, strings.Join(p, "."))
	}
	return strings.Join(out, " or ")
}

// generated is the alphabet Kubernetes draws the generated parts of names
// from; it has no vowels, so that words rarely pass for them.
const generated = `[bcdfghjklmnpqrstvwxz2456789]`

// PodNamePattern is a regular expression matching exactly the names of the
// pods a workload of kind (in any group) named name creates, so that web
// never matches web-api's pods. name is quoted, as object names may
// contain dots. A kind the job does not know is taken to name its pods
// <name>-<5 random>.
func PodNamePattern(kind, name string) string {
	n := regexp.QuoteMeta(name)
	scheme := suffixed
	for _, k := range known {
		if k.Kind == kind {
			scheme = k.pods
			break
		}
	}
	switch scheme {
	case hashed:
		return n + `-` + generated + `{1,10}-` + generated + `{5}`
	case ordinal:
		return n + `-[0-9]+`
	case scheduled:
		return n + `-[0-9]+-` + generated + `{5}`
	}
	return n + `-` + generated + `{5}`
}
