// Package helm renders Helm charts with the Helm SDK and finds, by
// rendering, the values keys that size a workload's containers.
//
// A chart is loaded from files (NewChart), or by package chartfetch from
// a directory of the repository, a chart repository or an OCI registry
// (NewLoadedChart): this package renders what it is given and reaches no
// network. A Release is a chart, a release name and
// namespace, and its values as Helm would merge them from every layer
// (Merge). An Engine says how charts render (in this process or in a
// render process of the job's binary, with which capabilities, within how
// long); Engine.Render renders a release as helm template does.
//
// Finder.Keys renders a release once with its values, then once more with
// a distinct probe quantity written under every candidate key at the same
// time: under every mapping of the values it writes requests and limits
// of cpu and memory, and, where the mapping has no resources key, the
// same under resources, which templates read relative to a mapping they
// range over. For the fields still without a key it renders once more
// with a probe in every string and number of the values, and in every
// unset path the templates read. For the containers whose requests still
// have no key of their own, it renders once more with the mapping probes
// under every .Values path the templates read that the values do not
// set. Those go last: a mapping where a template reads a string, as
// charts read nameOverride through trunc, breaks the render, large charts
// read hundreds of such paths, and the resources a template reads under
// a mapping of the values the first probes already wrote. A probe that
// comes out as one
// resource value of exactly one container names the key that sets it; one
// that comes out in several containers is a shared key. A key is what a
// probe proves, never a guess from names, so resources,
// <component>.resources, sidecars[0].resources and scalar keys such as
// cpuRequest are all found the same way, and the renders are per
// release, not per container.
//
// A probe is ten digits from 7000000001 on, written with a unit (m, Mi,
// or the unit of the value it replaces), and recognised by its digits
// whatever the template does around them: quoting, toYaml, a unit of its
// own. Probe renders skip the values schema, which real charts often
// close to unknown keys, and parse only the documents that may hold a pod
// template. They leave out the templates that render none of the
// release's containers, where most probes that break a render do (a
// mapping given to b64enc in a Secret), but for partials, templates that
// define named templates and templates their chart quotes by name, as it
// includes them; a render that misses a template left out makes the
// probes render the whole chart. When a probe render fails, or loses a
// container, its candidates are rendered again without those whose probe
// the error quotes (required and fail messages usually quote the value),
// or else in halves, recursively, the second half split at once when the
// first renders; a single candidate that fails is dropped. Containers are
// followed from render to render by object and container name, or, when
// probes rename the objects, by their place in their template.
//
// Prove renders a release before and after a change of its values and
// checks that only the asked resource values of the target containers
// differ in the whole output. Test hooks (helm.sh/hook: test), which
// only helm test creates, are left out of proofs and of key finding.
// What a chart renders differently each time with the same values, a
// generated password or a random name, would make every proof fail: when
// the outputs differ, the release is rendered once more with its own
// values, and the objects of each template whose output changed between
// those two renders are left out of the comparison; if they hold a
// target container, the proof fails and says so.
package helm
