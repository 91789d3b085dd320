// Package helmsource knows how Flux HelmReleases and Argo CD Applications
// put a Helm release together: the objects that name a release and its
// chart (Release, FluxHelmRelease, ArgoApplication, ApplicationSets'
// generated Applications), the layers of values in Helm's order (Layer,
// ValuesFrom, ChartValuesFiles), which layer a values key belongs in
// (ChooseLayer), the paths of values to set (Assignment), and the
// post-renderers that patch what a chart renders (PostRender,
// OurPatches). It reads decoded objects and charts and writes nothing:
// render reads the files and edits them.
package helmsource
