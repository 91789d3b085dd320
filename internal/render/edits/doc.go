// Package edits holds the files one run edits and the textual edits that
// set a container's resources in them: in place (File.Apply, at a marked
// path with File.ApplyAt), as a strategic-merge patch in the
// kustomization that renders the target (Workspace.Patch,
// Workspace.MarkerPatch, Workspace.NewObjectPatch), in the patches or
// postBuild variables of the target's deployer (Workspace.ViaDeployer),
// at Helm values keys (ValuesPlacer, PostRendererPlacer) and at a
// HorizontalPodAutoscaler's utilisation targets (SetUtilization,
// MetricsPatch).
//
// Each file is edited in memory until Workspace.Write; its bytes as they
// were stay with it, so that a proof can build both and an edit that
// fails can be undone (Workspace.Begin, Workspace.Undo).
package edits
