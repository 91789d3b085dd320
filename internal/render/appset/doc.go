// Package appset works out, from the repository alone, the Argo CD
// Applications its ApplicationSets generate, for when the live ones
// cannot be read (Argo CD runs in another cluster): the generators that
// need nothing outside git (git directories and files, list, matrix and
// merge of these, and the cluster generator for this one cluster) with
// both template styles, fasttemplate's {{path}} and goTemplate's. Other
// generators are named as unsupported. It is the job's one expander of
// ApplicationSets: Generate evaluates the repository's, Expand one file's
// or document's for a caller that reads an ApplicationSet's Applications
// (helmsource, for which values files and charts they read), both within
// the same budgets, Expand also giving the templates of the generators it
// cannot evaluate as written.
package appset
