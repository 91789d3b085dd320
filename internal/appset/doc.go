// Package appset works out, from the repository alone, the Argo CD
// Applications its ApplicationSets generate, for when the live ones
// cannot be read (Argo CD runs in another cluster): the generators that
// need nothing outside git (git directories and files, list, matrix and
// merge of these, and the cluster generator for this one cluster) with
// both template styles, fasttemplate's {{path}} and goTemplate's. Other
// generators are named as unsupported.
package appset
